"""Streamlit helpers shared by the pages: cached loaders, the shared sidebar, URL state, safe output.

This is the only package (besides pages/) that imports streamlit.
"""
