"""Pictures of attention as plain data: the heatmap spec and its one colour mapping, PNG/SVG drawings, grids, GIFs;
and the bounded cache through which sessions share the drawings they all show.

Imports NumPy and Pillow only (and `transformer_core` for shapes, `explorer.i18n` for the words a picture writes);
never Streamlit.
"""
