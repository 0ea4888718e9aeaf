"""Placeholder until the page is built."""
import streamlit as st

st.title("tokenization")
st.info("This lesson is being written.")
