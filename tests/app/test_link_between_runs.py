"""What a run takes from the address bar when runs overlap. A learner who presses → three times on a slider asks
for three runs; Streamlit stops each unfinished one at its next element, so a run can end before it writes its
address, or press again before the address of the run that ended reaches the browser. Either way the next run
comes with an address older than the learner's last move, which is not news: the slider keeps the learner's value
instead of jumping back (seen twice in the random walk: a slider showing 3 while the address said 6, and 48 while
it said 24). An address that really is news, a pasted link or the Back button, still wins.
"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from harness.apptest import page_from_function, page_from_string


def _page_with_a_linked_slider():
    import streamlit as st

    from lessons.common.ui import linked

    linked.start_address()
    linked.slider("How many candidates", "k", 3, 20, 10)
    if not st.session_state.get("cut_short"):  # a run stopped by the next click never reaches its end
        linked.write_address()


def a_page_opened_at(value: str) -> AppTest:
    app = page_from_function(_page_with_a_linked_slider)
    app.query_params["k"] = value
    return app.run()


def test_a_run_cut_short_before_writing_its_address_does_not_make_the_old_address_news():
    app = a_page_opened_at("3")
    app.session_state["cut_short"] = True
    app.slider(key="k").set_value(4).run()
    assert app.query_params["k"] == "3"  # the browser still shows the address of the last finished run

    app.session_state["cut_short"] = False
    app.slider(key="k").set_value(6).run()
    assert app.slider(key="k").value == 6
    assert app.query_params["k"] == "6"


def test_an_address_older_than_the_learners_last_move_does_not_set_the_slider_back():
    app = a_page_opened_at("3")
    app.slider(key="k").set_value(4).run()
    assert app.query_params["k"] == "4"  # this run wrote its address ...

    app.query_params["k"] = "3"  # ... but the learner pressed again before the browser had it
    app.slider(key="k").set_value(6).run()
    assert app.slider(key="k").value == 6
    assert app.query_params["k"] == "6"


def test_an_address_this_session_did_not_write_still_wins_over_the_slider():
    app = a_page_opened_at("3")
    app.slider(key="k").set_value(6).run()
    assert app.query_params["k"] == "6"

    app.query_params["k"] = "3"  # the Back button, to the view before
    app.run()
    assert app.slider(key="k").value == 3

    app.query_params["k"] = "12"  # a pasted link
    app.run()
    assert app.slider(key="k").value == 12 and app.query_params["k"] == "12"


def test_a_value_published_by_this_run_is_not_news_to_a_second_reading_in_the_same_run():
    app = page_from_string(
        "from lessons.common.ui import linked\n"
        "linked.start_address()\n"
        "linked.publish('k', 5)\n"
        "news = linked.is_news('k')\n"
        "linked.write_address()\n"
        "import streamlit as st\n"
        "st.write(f'news: {news}')\n"
    )
    app.query_params["k"] = "3"
    app.run()
    assert app.markdown[0].value == "news: False" and app.query_params["k"] == "5"
