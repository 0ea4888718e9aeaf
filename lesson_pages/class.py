"""Run a class: start one and share its student link; with the lecturer link, watch the class answer each
exercise live, reveal the answers, export them and delete the class.

Everything comes from `lessons.common.ui.classroom`; this page only lays it out.
"""

import streamlit as st

from lessons.common.ui import classroom, sidebar

sidebar.current()
st.title("Run a class")
classroom.show_class_page()
