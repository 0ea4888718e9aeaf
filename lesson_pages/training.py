"""Train it yourself: retrain one of the app's three small models live and watch the loss fall.

The fresh model lives in this browser session only (st.session_state): it never replaces the shipped weights,
on disk or in the copy every session reads. Trainings take turns (lessons.common.training_slots), and in hosted
mode each run has a time budget. Every number comes from `lessons.training`; this page only lays it out.
"""

import streamlit as st

from anatomy.training import loop
from anatomy.training.recipes import RECIPES
from lessons.common.ui import check_yourself, frame, linked, sidebar, widgets
from lessons.training import exercises, links, live, text, ui

sidebar.current()  # first: a deep link on a fresh server goes through app.py (this lesson reads no sidebar text)
st.title("Train it yourself")
st.markdown(text.INTRO)

choice = ui.choose_settings()
budget, device = ui.show_where_it_runs()
# While an exercise waits for an answer, training and its outcome are held back: the loss curve would give it away.
result = None
if not check_yourself.offer(exercises.OFFERS, RECIPES[choice.model], choice.seed):
    result = ui.train_when_asked(choice, budget, device)  # this browser tab's own run, from its session state
    if result is None:
        ui.show_unfinished_or_invite()  # what became of a run left before it was done, or "Press Train"
    else:
        ui.show_outcome(result)
if result is None:  # the example word's field comes with a run's outcome; until then the link keeps the word
    linked.carry(links.WORD)

widgets.show_source(
    loop.train,
    loop.teacher_forced_loss,
    loop.learning_rate_factor,
    live.train_fresh,
    live.with_held_out_accuracy,
    title=text.SOURCE_TITLE,
)
frame.previous_and_next("training")
