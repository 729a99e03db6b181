"""Shared by every page: charts, exports, URL state, theme, sidebar, router, session keys, images.

Module names mean the same in every page package: ``controls`` reads the widgets (and declares the page's URL
settings), ``views`` draws the sections below the controls, ``charts`` builds figures without drawing them; other
modules are named for the one thing they draw or do.
"""
