"""A seeded random walk through every page, clicking like a person (harness/walk.py): after each step, no
exception box, no traceback in the server's log, every picker names one of its own options and the tokens
of the text in the sidebar, and the address opened in a fresh browser context shows the same view. CI walks
one fixed seed; `benchmarks/random_walk.py` walks several, for longer.
A failure prints the seed and every step, so the walk can be replayed."""

from __future__ import annotations

import pytest

from anatomy.checkpoints.pretrained import load_pretrained
from harness.browser import ARTIFACTS
from harness.server import StreamlitServer
from harness.walk import Walk

SEED = 2026
STEPS = 250


@pytest.fixture(scope="module")
def tokens_of():
    tokenizer = load_pretrained(device="cpu").tokenizer

    def tokens(text: str) -> list[str]:
        return tokenizer.convert_ids_to_tokens(tokenizer(text, truncation=True, max_length=512)["input_ids"])

    return tokens


@pytest.mark.slow
@pytest.mark.long
def test_a_random_walk_through_every_page_finds_no_crash_no_stale_picker_and_no_link_to_another_view(
    page, new_context, tokens_of
):
    log = ARTIFACTS / "streamlit-random-walk.log"
    # A server of its own, with short training runs: the walk presses Train too.
    with StreamlitServer(log_path=log, environment={"ANATOMY_TRAINING_BUDGET_SECONDS": "2"}) as server:
        reopener = new_context().new_page()  # someone else, opening the address bar's link
        walk = Walk(page, server.url, SEED, server_log=log, tokens_of=tokens_of, reopener=reopener)
        problems = walk.run(STEPS)
        assert not problems, walk.report()
        assert len(walk.steps) == STEPS


def test_the_walk_reads_a_pickers_options_from_its_own_list_never_from_another_still_open(app):
    # On a busy machine the list one picker opened may still be on the page when the walk reads the next
    # picker's options: read as that picker's, "layer 0 … layer 8" made a "Query head" showing "head 0" look stale.
    app.open("multihead", min_plots=1)
    walk = Walk(app.page, app.base_url, SEED)
    layer, head = (walk.visible('[data-testid="stSelectbox"]')[index] for index in (0, 1))
    assert walk.widget_label(layer) == "Layer" and walk.widget_label(head).startswith("Head")
    layer.locator('button[aria-label="Open"]').first.click()
    assert walk.options_of(layer)[1][:2] == ["layer 0", "layer 1"]
    assert walk.options_of(head)[1] == []  # the open list is the layer picker's: the head picker has none open
    app.page.keyboard.press("Escape")
    head.locator('button[aria-label="Open"]').first.click()
    assert walk.options_of(head)[1][:2] == ["head 0", "head 1"]


def test_the_walk_opens_a_new_view_elsewhere_once_and_reports_a_view_its_address_does_not_give(app, new_context):
    app.open("multihead", min_plots=1)
    reopener = new_context().new_page()
    loads: list[str] = []
    reopener.on("request", lambda request: loads.append(request.url) if request.resource_type == "document" else None)
    walk = Walk(app.page, app.base_url, SEED, reopener=reopener)

    assert walk.check() == []  # the address, opened anew in the other context, shows this view
    assert loads == [app.page.url]  # loaded once, while this tab's pickers were checked
    assert walk.check() == []
    assert len(loads) == 1  # the same view at the same address is not opened again

    app.page.evaluate("() => { document.querySelector('[data-testid=\"stMain\"] h1').innerText = 'Another heading'; }")
    (problem,) = walk.check()
    assert "opened anew shows another view" in problem and "Another heading" in problem
