"""Streamlit helpers shared by the pages: session-state keys, widget groups, chart builders and exports."""
