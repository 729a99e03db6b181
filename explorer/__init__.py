"""The app's services that need no Streamlit: they use :mod:`transformer_core` and are tested without a browser."""
