"""Placeholder until the page is built."""
import streamlit as st

st.title("encoder")
st.info("This lesson is being written.")
