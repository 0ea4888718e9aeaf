"""Positional encodings: the sinusoidal table of the original paper, its promised properties measured,
the table a real BERT-family model learned instead, and the rotary positions of SmolLM2.

Width d, base and the number of positions, chosen above the tabs, define the sinusoidal table every tab
reads. Every number comes from `anatomy.positional` and `lessons.positional`; this page only lays it out.
"""

from collections.abc import Callable

import streamlit as st

from anatomy.positional import sinusoidal_positional_encoding
from anatomy.rotary import Rotation
from lessons.common.ui import check_yourself, frame, sidebar, widgets
from lessons.positional import exercises, links, text, ui
from lessons.positional.analysis import (
    describe_encoding,
    learned_position_table,
    offset_profile,
    rebuilds_identically,
    similarity_matrix,
)
from lessons.positional.rotary import QueriesAndKeys, layer_inputs, queries_and_keys

SOURCE_CODE: dict[str, list[Callable[..., object]]] = {  # what each tab runs, shown under the page
    links.CURVES: [sinusoidal_positional_encoding],
    links.TABLE: [sinusoidal_positional_encoding, learned_position_table],
    links.SIMILARITY: [similarity_matrix, offset_profile],
    links.PROPERTIES: [describe_encoding, rebuilds_identically],
    links.ROTARY: [Rotation.at, Rotation.apply, layer_inputs, queries_and_keys, QueriesAndKeys.scores],
}

context = sidebar.current()
st.title("Positional encodings")
st.markdown(text.INTRO)

positions_in_text = ui.show_text_positions(context)
encoding = ui.choose_encoding(context, positions_in_text)
# While an exercise waits for an answer, the tabs are held back: they would give it away.
if encoding is not None and not check_yourself.offer(
    exercises.OFFERS, encoding.positions_in_text, encoding.width, encoding.base, encoding.shown
):
    widgets.show_open_tab(ui.SECTIONS, links.TAB, encoding)

widgets.show_source(*SOURCE_CODE[widgets.open_tab_name(ui.SECTIONS, links.TAB)])
frame.previous_and_next("positional")
