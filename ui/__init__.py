"""The app's Streamlit code: ``ui.pages`` (the page registry and the preamble every page calls), ``ui.common``
(shared by every page) and one package per page (``ui.attention``, ``ui.positional``, ``ui.vit``, ``ui.builder``,
``ui.training``, ``ui.lessons``). ``ui.common`` never imports a page package."""
