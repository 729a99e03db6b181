"""Attention Lab page.

Module names mean the same in every page package: ``controls`` reads the widgets (and declares the page's URL
settings), ``views`` draws the sections below the controls, ``charts`` builds figures without drawing them; other
modules are named for the one thing they draw or do. Here the lab's many keys and its URL settings have a module of
their own, ``keys``, which the controls, the views and the lenses all import.
"""
