"""The analyses behind the Attention Lab, Positional Encodings, ViT and Model Builder pages.

Imports `transformer_core`, NumPy, Pillow, `explorer.render` and, for a published model as one of the Lab's
subjects, `explorer.pretrained.lab`; never Streamlit.
"""
