"""Placeholder until the page is built."""
import streamlit as st

st.title("causal")
st.info("This lesson is being written.")
