"""Plotly figure builders: pure functions (arrays, labels, options) -> go.Figure. No streamlit here."""
