"""The experiments behind the guided lessons, the live runs they train through, and the findings their reveals report.

Imports `transformer_core` and `explorer.runs`; never Streamlit.
"""
