"""Placeholder until the page is built."""
import streamlit as st

st.title("attention")
st.info("This lesson is being written.")
