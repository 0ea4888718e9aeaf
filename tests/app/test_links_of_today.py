"""Links shared before the layout change still open the same view.

Teachers have pasted links into slides and messages; the code moved under them (issue 14), the links must not
break. Each link below is written out literally, as it was made by the app before the move, with what the view
must then show. The keys are checked against each lesson's `links.py` too: renaming a key breaks this test, not
a lecture.
"""

from __future__ import annotations

import importlib
from urllib.parse import parse_qsl, urlsplit

import pytest

from harness.apptest import assert_clean, open_page

TEXT = "the cat sat on the mat"
LINKS_OF_TODAY = [
    # (link, {widget key: the value it must hold}, {tab key: the tab that must be open})
    (
        "/tokenization?text=the+cat+sat+on+the+mat&tok_tab=Tokens+%E2%86%92+vectors&tok_view=position&tok_dims=24"
        "&tok_first=0&tok_special=False&tok_pair=Why%3F",
        {"tok_view": "position", "tok_dims": 24, "tok_special": False, "tok_pair": "Why?"},
        {"tok_tab": "Tokens → vectors"},
    ),
    (
        "/tokenization?text=the+cat+sat+on+the+mat&tok_tab=Three+tokenizers&tok_vocab=300",
        {"tok_vocab": 300},
        {"tok_tab": "Three tokenizers"},
    ),
    (
        "/positional?text=the+cat+sat+on+the+mat&pos_tab=Similarity+between+positions&pos_d=8&pos_base=100&pos_n=16"
        "&pos_p=3&pos_measure=dot",
        {"pos_d": 8, "pos_base": 100.0, "pos_n": 16, "pos_p": 3, "pos_measure": "dot"},
        {"pos_tab": "Similarity between positions"},
    ),
    ("/positional?text=the+cat+sat+on+the+mat&pos_d=8&pos_base=100&pos_n=16&pos_dims=0%2C5", {"pos_dims": [0, 5]}, {}),
    (
        "/attention?text=the+cat+sat+on+the+mat&att_source=model&att_layer=2&att_head=5&att_step=3&att_query=4"
        "&att_key=1&att_all=True",
        {
            "att_source": "model",
            "att_layer": 2,
            "att_head": 5,
            "att_step": 3,
            "att_query": 4,
            "att_key": 1,
            "att_all": True,
        },
        {},
    ),
    ("/attention?att_source=apple&att_step=5", {"att_source": "apple", "att_step": 5}, {}),
    (
        "/multihead?text=the+cat+sat+on+the+mat&mh_tab=Head+view&mh_layer=3&mh_head=7&mh_heads=2%2C3&mh_threshold=0.25",
        {"mh_layer": 3, "mh_head": 7, "mh_heads": [2, 3], "mh_threshold": 0.25},
        {"mh_tab": "Head view"},
    ),
    (
        "/multihead?text=the+cat+sat+on+the+mat&mh_tab=Head+statistics&mh_stat=entropy",
        {"mh_stat": "entropy"},
        {"mh_tab": "Head statistics"},
    ),
    (
        "/multihead?text=the+cat+sat+on+the+mat&mh_tab=Switch+a+head+off&mh_layer=1&mh_ablate=4%2C10",
        {"mh_layer": 1, "mh_ablate": [4, 10]},
        {"mh_tab": "Switch a head off"},
    ),
    (
        "/causal?text=the+cat+sat+on+the+mat&cm_tab=One+head+on+your+text&cm_layer=2&cm_head=5",
        {"cm_layer": 2, "cm_head": 5},
        {"cm_tab": "One head on your text"},
    ),
    (
        "/causal?text=the+cat+sat+on+the+mat&cm_tab=No+mask%2C+padding%2C+causal&cm_pad=5&cm_pad_causal=True",
        {"cm_pad": 5, "cm_pad_causal": True},
        {"cm_tab": "No mask, padding, causal"},
    ),
    (
        "/causal?cm_tab=A+trained+decoder&cm_word=penguin&cm_cheater=True&cm_step=2",
        {"cm_word": "penguin", "cm_cheater": True, "cm_step": 2},
        {"cm_tab": "A trained decoder"},
    ),
    (
        "/encoder?text=the+cat+sat+on+the+mat&enc_tab=Attention%2C+all+layers&enc_layer=2&enc_head=3",
        {"enc_layer": 2, "enc_head": 3},
        {"enc_tab": "Attention, all layers"},
    ),
    (
        "/encoder?text=the+cat+sat+on+the+mat&enc_tab=Feed-forward&enc_layer=4&enc_neurons=12",
        {"enc_layer": 4, "enc_neurons": 12},
        {"enc_tab": "Feed-forward"},
    ),
    (
        "/decoder?dec_word=penguin&dec_tab=Writing+the+answer",
        {"dec_word": "penguin"},
        {"dec_tab": "Writing the answer"},
    ),
    (
        "/training?tr_model=reverser&tr_steps=300&tr_lr=0.01&tr_seed=7&tr_word=owl",
        {"tr_model": "reverser", "tr_steps": 300, "tr_lr": "0.01", "tr_seed": 7},
        {},
    ),
]


def lesson_link_keys(lesson: str) -> set[str]:
    links = importlib.import_module(f"lessons.{lesson}.links")
    return {value for name, value in vars(links).items() if name.isupper() and isinstance(value, str)}


@pytest.mark.slow
@pytest.mark.parametrize("link, widgets, tabs", LINKS_OF_TODAY, ids=[link for link, _, _ in LINKS_OF_TODAY])
def test_a_link_made_before_the_move_opens_the_same_view(link, widgets, tabs):
    path = urlsplit(link)
    lesson = path.path.strip("/")
    query = dict(parse_qsl(path.query))
    lesson_keys = {key for key in query if key not in ("text", "model")}
    assert lesson_keys <= lesson_link_keys(lesson), f"keys no longer defined in lessons/{lesson}/links.py"
    app = open_page(f"lesson_pages/{lesson}.py", query=query)
    assert_clean(app)
    assert not [warning.value for warning in app.warning if "link" in warning.value.lower()], "a value was refused"
    for key, expected in {**widgets, **tabs}.items():
        assert app.session_state[key] == expected, key
    if "text" in query:
        assert app.session_state["text"] == query["text"]
