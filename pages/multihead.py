"""Placeholder until the page is built."""
import streamlit as st

st.title("multihead")
st.info("This lesson is being written.")
