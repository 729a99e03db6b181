"""Published models in the app: the catalogue on offer, and what the pretrained pages compute with a loaded model.

Imports `transformer_core` (its `pretrained` loaders), NumPy, `explorer.host` and the analyses of `explorer.lab`
that apply to any model; never Streamlit.
"""
