"""Transformer Anatomy: the entrypoint. Every run starts here: the page's settings, the navigation over the
lessons (listed in lessons/common/ui/frame.py), the sidebar every lesson shares; then the lesson itself."""

from pathlib import Path

import streamlit as st

from lessons.common import memory
from lessons.common.ui import charts, classroom, frame, history, linked, sidebar, theme, tour, tour_builder

memory.configure_allocator()  # before the model loads: freed tensors go back to the system (see memory.py)
memory.exempt_late_imports()  # what an earlier run imported in bulk, out of every full collection
memory.collect_garbage_now_and_then()  # in place of Streamlit's full collection after every run (see memory.py)

# A local file: a material-symbol page icon would make the browser fetch it from a font CDN.
ICON = Path(__file__).parent / "assets" / "icon.png"
st.set_page_config(page_title="Transformer Anatomy", page_icon=str(ICON), layout="wide")

lesson = frame.start_navigation()
charts.note_lesson(lesson.url_path)  # downloaded figures are named after it
charts.prepare_page()  # chart text readable in both themes, the toolbar above each chart
frame.add_browser_scripts(
    charts.SVG_BUTTON_SCRIPT,  # the SVG button in every chart's toolbar
    theme.SCRIPT,  # the learner's light or dark, on every page
    history.SCRIPT,  # one entry in the browser's history per action of the learner, a page change included
)
linked.start_address()  # the sidebar and the page publish their choices into it...
page = lesson.url_path or "home"
classroom.join(page)  # a student link's class: its banner, first on the page
sidebar.render()
tour.show_picker()  # in the sidebar, below the text and model
tour_builder.show(page)  # below it: a tour made of the views on screen
tour.show_bar(page)  # while a tour runs: first on the page
lesson.run()
linked.write_address()  # ...and it goes to the address bar once: one history entry per view
