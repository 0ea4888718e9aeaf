"""A small lecture room in CI (benchmarks/load_test.py runs the full room of 40, with the same harness.load):
four students speaking Streamlit's websocket protocol, one of whom trains a model live, then two in real Chromium,
each on one hosted server for twenty seconds. Every view must be the student's own, nothing may fail, and the
shared models' weights (the embedded one and the three trained here) must hash the same before, after, and as freshly
loaded from their files."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness import room
from harness.load import TRAINED_MODELS, run_load_test

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")


def run_room(**settings) -> dict:
    """The load test in a thread of its own: it starts its own asyncio loop, which cannot nest inside the
    loop pytest-playwright keeps running in the main thread when browser tests share this session."""
    with ThreadPoolExecutor(max_workers=1) as executor:
        return executor.submit(run_load_test, **settings).result()


def test_a_view_with_another_students_tokens_is_reported_as_a_leak():
    text = room.student_text(0, 0)
    own = {"the", "red", "penguin"}
    assert room.view_problems(0, 0, text, text, own) == []
    assert any("other students" in problem for problem in room.view_problems(0, 0, text, text, own | {"kangaroo"}))
    assert any("own tokens" in problem for problem in room.view_problems(0, 0, text, text, {"the", "red"}))
    assert any("earlier round" in problem for problem in room.view_problems(0, 1, text, text, own | {"blue"}))
    assert any("sidebar" in problem for problem in room.view_problems(0, 0, text, "someone else's", None))


def test_every_student_writes_a_different_text_with_a_single_token_marker(embedded):
    texts = {room.student_text(session, 0) for session in range(len(room.MARKERS))}
    assert len(texts) == len(room.MARKERS)
    for word in (*room.MARKERS, *room.ROUNDS):
        assert embedded.tokenizer.tokenize(word) == [word], word


def test_every_students_word_is_one_the_trained_models_read():
    from anatomy.training.recipes import RECIPES

    words = [room.student_word(session) for session in range(len(room.MARKERS))]
    assert len(set(words)) == len(words)
    for name in TRAINED_MODELS:
        for word in words:
            RECIPES[name].task.check(word)  # raises for a word the model was not trained on


def test_a_word_lesson_must_name_its_own_word_and_answer_and_no_one_elses():
    assert room.word_problems(0, "eginnpu", {"the", "sorter", "wrote", "eginnpu", "penguin"}) == []
    assert room.word_problems(0, "eginnpu", {"wrote", "penguin"}), "the answer is missing"
    assert any(
        "other students" in problem for problem in room.word_problems(0, "eginnpu", {"eginnpu", "penguin", "kangaroo"})
    )


def test_a_press_of_train_must_end_with_an_outcome_drawn_on_the_trainers_own_word():
    assert room.training_problems("owl", "finished", {"l", "o", "w"}) == []
    assert room.training_problems("owl", "gave up waiting", set()) == []
    assert room.training_problems("owl", None, {"l", "o", "w"}), "no outcome at all"
    assert room.training_problems("owl", "stopped by the budget", {"l", "o", "w", "b"}), "another word"


def test_trainers_are_spread_over_the_room():
    assert room.trainer_sessions(40, 8) == {0, 5, 10, 15, 20, 25, 30, 35}
    assert room.trainer_sessions(4, 1) == {0}
    assert room.trainer_sessions(4, 0) == set()


@pytest.mark.slow
def test_the_server_shows_the_hash_of_the_model_the_link_names(monkeypatch):
    """The load test reads the weights' hashes inside the server: ?fingerprint=1 for the embedded model,
    ?fingerprint=sorter (or another model trained here) for that one."""
    from harness.apptest import open_page
    from lessons.common import hosting
    from lessons.common.ui import loaders

    monkeypatch.setenv(hosting.FINGERPRINT_VARIABLE, "1")
    for asked, expected in [
        ("1", loaders.shared_model_fingerprint()),
        *((name, loaders.shared_model_fingerprint(name)) for name in TRAINED_MODELS),
    ]:
        app = open_page("lesson_pages/home.py", query={"fingerprint": asked})
        (shown,) = [item.value for item in app.sidebar.caption if "sha256" in item.value]
        assert shown == f"weights sha256 {expected}", asked
    assert len({loaders.shared_model_fingerprint(name) for name in ("", *TRAINED_MODELS)}) == 4


@pytest.mark.slow
def test_the_server_shows_the_hash_of_smollm2_when_the_link_names_it(monkeypatch):
    """Lesson 9's SmolLM2 is shared by every session too: the lecture hall's load test hashes it in each
    replica with ?fingerprint=SmolLM2-135M-Instruct."""
    from harness.apptest import open_page
    from lessons.common import hosting
    from lessons.common.ui import loaders

    monkeypatch.setenv(hosting.FINGERPRINT_VARIABLE, "1")
    monkeypatch.setenv(hosting.LANGUAGE_MODEL_VARIABLE, "1")
    app = open_page("lesson_pages/home.py", query={"fingerprint": hosting.LANGUAGE_MODEL})
    (shown,) = [item.value for item in app.sidebar.caption if "sha256" in item.value]
    expected = loaders.weights_fingerprint(loaders.get_chat_model().loaded.model)
    assert shown == f"weights sha256 {expected}"
    assert expected != loaders.shared_model_fingerprint()


def assert_a_clean_room(figures: dict) -> None:
    assert figures["errors"] == 0, figures["error_samples"]
    assert figures["requests_off_loopback"] == 0, figures["off_loopback_samples"]
    assert min(figures["views_per_session_min_max"]) >= 1, figures
    assert figures["weights_unchanged"], figures
    assert figures.get("trained_models_unchanged", True), figures
    assert figures["rss_mb_during_load_min_max_end"][1] < 3_000, figures  # caches are capped


@pytest.mark.slow
@pytest.mark.solo
def test_four_websocket_students_one_training_for_twenty_seconds_see_only_their_own_results(tmp_path):
    figures = run_room(sessions=4, duration=20, client="websocket", trainers=1, log_path=tmp_path / "server.log")
    assert_a_clean_room(figures)
    assert figures["typed_view_p50_p95_s"], "students typed new text into the sidebar too"
    assert figures["trained_view_p50_p95_s"], "the trainer pressed Train"
    assert "trained_models_unchanged" in figures


@pytest.mark.browser
@pytest.mark.solo
@pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"),
    reason="needs Debian's Chromium at /usr/bin/chromium (in CI a missing browser fails instead)",
)
def test_two_browser_students_for_twenty_seconds_see_only_their_own_painted_results(tmp_path):
    figures = run_room(sessions=2, duration=20, client="browser", log_path=tmp_path / "server.log")
    assert_a_clean_room(figures)
