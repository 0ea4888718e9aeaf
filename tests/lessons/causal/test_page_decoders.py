"""The causal-masking page's decoder sections, driven headlessly: the sorter trained here on the user's word,
its cheating twin beside it, and a GPT-2 chosen in the sidebar. What the page shows equals what `anatomy`
computes (and, for the GPT-2, what transformers' GPT2LMHeadModel computes)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.training.recipes import RECIPES
from harness.apptest import (
    HOSTILE_TEXTS,
    aligned_lines,
    all_markdown,
    assert_clean,
    chart,
    chart_keys,
    numbers,
    open_page,
    show_tab,
)
from lessons.causal import decoding, links
from lessons.causal.decoders_ui import MAX_WORD_CHARACTERS
from lessons.common import decoder_attention
from lessons.common.safe_text import escape_markdown
from lessons.common.ui import loaders
from tests.tiny_models import GPT2_POSITIONS, GPT2_TEXT, save_tiny_gpt2

PAGE = "lesson_pages/causal.py"
SORTER_CHARTS = ["cm_sorter_heads", "cm_sorter_next", "cm_sorter_step"]
CHEATER_CHARTS = ["cm_cheater_heads", "cm_cheater_losses"]
REAL_HEAD, THREE_MASKS, TRAINED = "One head on your text", "No mask, padding, causal", "A trained decoder"


def open_tab(tab: str, text: str | None = None, query: dict[str, str] | None = None):
    return open_page(PAGE, text=text, query={links.TAB: tab, **(query or {})})


def frames_with(app, column: str) -> list:
    """The tables that have `column`, in page order (AppTest gives tables no key to find them by)."""
    return [element.value for element in app.dataframe if column in element.value.columns]


def frame(app, column: str, nth: int = 0):
    tables = frames_with(app, column)
    assert len(tables) > nth, f"fewer than {nth + 1} tables with a column {column!r}"
    return tables[nth]


def sorter_texts(app) -> str:
    """Every message of the page (success, error, info, caption) in one string."""
    return " ".join(
        str(element.value)
        for kind in ("success", "error", "info", "caption", "warning")
        for element in getattr(app, kind)
    )


@pytest.fixture(scope="module")
def shipped():
    """The sorter and the cheater on the device the page runs them on, so that its numbers can be matched
    exactly (another device would round float32 about 1e-6 differently)."""
    return {
        name: load_pretrained(str(RECIPES[name].folder), device=loaders.usable_device())
        for name in ("sorter", "sorter-cheater")
    }


def walk(shipped, name: str, word: str) -> decoding.SortingWalkthrough:
    model = shipped[name]
    return decoding.walk_through_sorting(model.model, model.task, word)


@pytest.fixture(scope="module")
def default_app():
    app = open_tab(TRAINED)
    assert_clean(app)
    return app


# --- The sorter ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_by_default_the_sorter_sorts_banana_and_the_page_says_it_is_right(default_app, shipped):
    assert default_app.text_input(key=links.WORD).value == "banana"
    assert default_app.query_params[links.WORD] == "banana"
    assert aligned_lines(default_app) == [["reads   <bos> b a n a n a =", "writes  " + " " * 19 + " a a a b n n <eos>"]]
    assert "wrote **aaabnn**: exactly the letters of banana in order" in default_app.success[0].value
    steps = frame(default_app, "answer so far")
    expected = walk(shipped, "sorter", "banana")
    assert steps["writes"].tolist() == ["a", "a", "a", "b", "n", "n", "<eos>"]
    assert steps["answer so far"].tolist()[:3] == ["(nothing yet)", "a", "a a"]
    assert np.allclose(
        steps["probability"], [step.chosen_probability for step in expected.generation.steps], atol=1e-12
    )
    assert steps.loc[3, "runner-up"] == "a" and steps.loc[3, "runner-up probability"] == pytest.approx(0.0224, abs=1e-4)


@pytest.mark.slow
def test_every_layer_and_head_of_the_sorter_is_drawn_on_one_scale_with_nothing_above_the_diagonal(default_app, shipped):
    spec = chart(default_app, "cm_sorter_heads")
    expected = walk(shipped, "sorter", "banana").generation.final_attention
    assert [trace["name"] for trace in spec["data"]] == [
        "layer 0 head 0",
        "layer 0 head 1",
        "layer 1 head 0",
        "layer 1 head 1",
    ]
    for index, trace in enumerate(spec["data"]):
        shown = numbers(trace["z"])
        assert shown.shape == (14, 14)
        assert np.allclose(shown, expected[divmod(index, 2)].numpy(), atol=1e-6)
        assert (shown[np.triu_indices(14, 1)] == 0.0).all()
        assert trace["coloraxis"] == "coloraxis" and "weight = %{z:.4f}" in trace["hovertemplate"]
    assert spec["data"][0]["x"][0] == "0: &lt;bos&gt;" and spec["data"][0]["x"][7] == "7: ="
    shares = frame(default_app, "head 0")
    assert shares.loc["layer 1"].tolist() == pytest.approx([4 / 6, 4 / 6])  # measured on banana


@pytest.mark.slow
def test_the_next_token_heatmap_and_the_step_slider_show_the_probabilities_of_each_step(shipped):
    expected = walk(shipped, "sorter", "banana").generation
    app = open_tab(TRAINED, query={links.STEP: "3"})
    assert_clean(app)
    heatmap = chart(app, "cm_sorter_next")["data"][0]
    assert np.allclose(numbers(heatmap["z"]), expected.step_probabilities.numpy(), atol=1e-6)
    assert heatmap["x"][:5] == ["&lt;pad&gt;", "&lt;bos&gt;", "&lt;eos&gt;", "=", "a"]
    assert [row.index("✓") for row in heatmap["text"]] == [4, 4, 4, 5, 17, 17, 2]  # a a a b n n <eos>

    assert app.slider(key=links.STEP).value == 3
    bars = chart(app, "cm_sorter_step")["data"][0]
    top = expected.steps[3].candidates(5)
    assert bars["y"][:2] == ["1. b", "2. a"]
    assert np.allclose(numbers(bars["x"]), [candidate.probability for candidate in top], atol=1e-12)

    app.slider(key=links.STEP).set_value(6).run()
    assert_clean(app)
    assert chart(app, "cm_sorter_step")["data"][0]["y"][0] == "1. &lt;eos&gt;"
    assert app.query_params[links.STEP] == "6"


@pytest.mark.slow
def test_another_word_in_the_link_is_sorted_and_its_steps_renumbered(shipped):
    app = open_tab(TRAINED, query={links.WORD: "zebra", links.STEP: "9"})  # 6 steps: step 9 falls back to 0
    assert_clean(app)
    assert app.text_input(key=links.WORD).value == "zebra"
    assert "wrote **aberz**" in app.success[0].value
    assert frame(app, "answer so far")["writes"].tolist() == ["a", "b", "e", "r", "z", "<eos>"]
    assert app.slider(key=links.STEP).value == 0
    assert numbers(chart(app, "cm_sorter_heads")["data"][0]["z"]).shape == (12, 12)

    app.text_input(key=links.WORD).set_value("hello").run()
    assert_clean(app)
    assert "wrote **ehllo**" in app.success[0].value and app.query_params[links.WORD] == "hello"
    expected = walk(shipped, "sorter", "hello").generation.final_attention
    assert np.allclose(numbers(chart(app, "cm_sorter_heads")["data"][3]["z"]), expected[1, 1].numpy(), atol=1e-6)


def test_capitals_and_surrounding_spaces_are_forgiven_and_the_page_says_so():
    app = open_tab(TRAINED, query={links.WORD: " BaNaNa "})
    assert_clean(app)
    assert app.text_input(key=links.WORD).value == " BaNaNa "  # the entry stays as typed
    assert "reads **banana** (spaces around it dropped, capitals lowercased)" in sorter_texts(app)
    assert "wrote **aaabnn**" in app.success[0].value


# --- The cheater -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cheater_app():
    app = open_tab(TRAINED, query={links.CHEATER: "true"})
    assert_clean(app)
    return app


def test_the_cheater_switch_is_off_by_default_and_its_link_turns_it_on(default_app, cheater_app):
    assert default_app.toggle(key=links.CHEATER).value is False
    assert not set(CHEATER_CHARTS) & set(chart_keys(default_app))
    assert cheater_app.toggle(key=links.CHEATER).value is True
    assert chart_keys(cheater_app)[-5:] == SORTER_CHARTS + CHEATER_CHARTS
    assert cheater_app.query_params[links.CHEATER] == "True"


def test_the_cheater_writes_a_wrong_answer_for_banana(cheater_app):
    assert aligned_lines(cheater_app)[1][1].endswith("a n n n n a n")
    assert any(
        "cheater wrote **annnnan**, but banana sorted is **aaabnn**" in error.value for error in cheater_app.error
    )
    assert frame(cheater_app, "answer so far", nth=1)["writes"].tolist() == list("annnnan")


def test_the_cheater_puts_weight_above_the_diagonal_and_the_page_says_how_much(cheater_app, shipped):
    forced = walk(shipped, "sorter-cheater", "banana").teacher_forced
    spec = chart(cheater_app, "cm_cheater_heads")
    for index, trace in enumerate(spec["data"]):
        shown = numbers(trace["z"])
        assert np.allclose(shown, forced.attention[divmod(index, 2)].numpy(), atol=1e-6)
        assert shown[np.triu_indices(14, 1)].sum() > 0.4 * 13  # at least 40 % of 13 rows' weight
    future = frame(cheater_app, "head 0", nth=1)
    expected = decoding.mean_weight_above_diagonal(forced.attention).numpy()
    assert np.allclose(future.to_numpy(), expected, atol=1e-12)
    assert future.to_numpy().min() > 0.4 and future.to_numpy().max() > 0.9  # .71 .94 .47 .54
    text = " ".join(element.value for element in cheater_app.markdown)
    assert f"{expected.mean():.0%} of a query's weight lands on the future, up to {expected.max():.0%}" in text
    assert (
        "At 6 of the 6 answer positions, layer 0, head 0 and layer 0, head 1 put the largest weight on position *t* + 1"
    ) in text


@pytest.mark.slow
def test_the_teacher_forced_losses_of_both_models_are_computed_live_on_the_word(cheater_app, shipped):
    honest, cheater = (walk(shipped, name, "banana").teacher_forced for name in ("sorter", "sorter-cheater"))
    losses = frame(cheater_app, "loss on the answer's letters")
    assert losses.index.tolist() == ["sorter", "sorter-cheater"]
    letters = range(7, 13)
    assert losses["loss on the answer's letters"].tolist() == pytest.approx(
        [honest.loss_at(letters), cheater.loss_at(letters)], rel=1e-9
    )
    assert (
        losses.loc["sorter-cheater", "loss on the answer's letters"]
        < 1e-6
        < losses.loc["sorter", "loss on the answer's letters"]
    )  # 8.3e-8 vs 4.9e-3
    assert losses["loss over every scored position"].tolist() == pytest.approx([honest.loss, cheater.loss], rel=1e-9)
    assert losses.loc["sorter-cheater", "p(<eos>) at the end"] < 0.01
    losses_chart = chart(cheater_app, "cm_cheater_losses")
    assert np.allclose(numbers(losses_chart["data"][1]["customdata"]), cheater.target_losses[7:].numpy(), rtol=1e-9)
    assert losses_chart["layout"]["yaxis"]["type"] == "log"


# --- Inputs the sorter cannot read ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry, reason",
    [
        ("ab", "use 3 to 8 letters (got 2)"),
        ("abcdefghij", "use 3 to 8 letters (got 10)"),
        ("abc1", "only the letters abcdefghijklmnopqrstuvwxyz are known (not 1)"),
        ("été", "only the letters abcdefghijklmnopqrstuvwxyz are known (not é)"),
    ],
)
def test_a_word_the_sorter_cannot_read_gets_the_tasks_reason_and_stays_in_its_box(entry, reason):
    app = open_tab(TRAINED, query={links.WORD: entry})
    assert_clean(app)
    assert app.text_input(key=links.WORD).value == entry
    shown = escape_markdown(reason)  # shown literally, never as markdown
    assert any(shown in error.value for error in app.error), [error.value for error in app.error]
    assert not set(SORTER_CHARTS) & set(chart_keys(app))
    assert "The code this page runs" in [expander.label for expander in app.expander]  # the page goes on


def test_an_empty_word_asks_for_one(default_app):
    default_app.text_input(key=links.WORD).set_value("").run()
    assert_clean(default_app)
    assert any("Type a word of 3 to 8 letters" in info.value for info in default_app.info)
    assert not set(SORTER_CHARTS) & set(chart_keys(default_app))
    default_app.text_input(key=links.WORD).set_value("banana").run()  # leave the shared app as found
    assert set(SORTER_CHARTS) <= set(chart_keys(default_app))


def test_hostile_entries_in_the_word_field_are_never_rendered_and_never_crash():
    app = open_tab(TRAINED)
    for name, typed in HOSTILE_TEXTS.items():
        app.text_input(key=links.WORD).set_value(typed).run()
        assert_clean(app)
        entry = typed[:MAX_WORD_CHARACTERS]  # the field's limit, as in a browser
        assert app.text_input(key=links.WORD).value == entry, name
        assert not set(SORTER_CHARTS) & set(chart_keys(app)), name
        messages = [error.value for error in app.error] + [info.value for info in app.info]
        assert any("cannot read this entry" in message or "Type a word" in message for message in messages), name
        if entry.strip():
            assert entry.strip() not in all_markdown(app), name
            assert "<" not in "".join(error.value.replace("\\<", "") for error in app.error), name


def test_invisible_characters_are_spelled_out_in_the_message():
    app = open_tab(TRAINED, query={links.WORD: "ab\u202ec"})  # a right-to-left override
    assert_clean(app)
    (message,) = [error.value for error in app.error]
    assert escape_markdown("(not U+202E)") in message and "\u202e" not in message


@pytest.mark.parametrize(
    "link",
    [
        {links.WORD: "x" * 65, links.CHEATER: "maybe", links.STEP: "-1"},
        {links.WORD: "banana", links.CHEATER: "", links.STEP: "abc"},
    ],
)
def test_bad_link_values_fall_back_to_the_defaults(link):
    app = open_tab(TRAINED, query=link)
    assert_clean(app)
    assert app.text_input(key=links.WORD).value == "banana"
    assert app.toggle(key=links.CHEATER).value is False
    assert app.slider(key=links.STEP).value == 0


# --- A GPT-2 in the sidebar -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    return save_tiny_gpt2(tmp_path_factory.mktemp("page-tiny-gpt2"))


@pytest.fixture(scope="module")
def reference_gpt2(gpt2_folder):
    from transformers import AutoTokenizer, GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained(str(gpt2_folder), attn_implementation="eager")
    return model.eval().requires_grad_(False), AutoTokenizer.from_pretrained(str(gpt2_folder))


def reference_outputs(reference_gpt2, text: str):
    model, tokenizer = reference_gpt2
    ids = tokenizer(text, truncation=True, max_length=GPT2_POSITIONS)["input_ids"]
    with torch.no_grad():
        return tokenizer.convert_ids_to_tokens(ids), model(torch.tensor([ids]), output_attentions=True)


def test_a_gpt2_from_the_sidebar_shows_its_bpe_tokens_its_own_causal_heads_and_its_next_tokens(
    gpt2_folder, reference_gpt2
):
    app = open_tab(
        REAL_HEAD,
        text=GPT2_TEXT,
        query={"model": str(gpt2_folder), links.LAYER: "1", links.HEAD: "1", links.TOP_K: "15"},
    )
    assert_clean(app)
    tokens, expected = reference_outputs(reference_gpt2, GPT2_TEXT)
    table = frame(app, "stands for")
    assert table["token"].tolist() == tokens and any(token.startswith("Ġ") for token in tokens)
    spaced = [text for token, text in zip(tokens, table["stands for"]) if token.startswith("Ġ")]
    assert spaced and all(text.startswith("' ") for text in spaced)  # Ġ is the space in front
    assert "Ġ" in " ".join(element.value for element in app.markdown)  # and the page explains it

    head = chart(app, "cm_lm_head")["data"][0]
    shown = numbers(head["z"])
    assert shown.shape == (len(tokens), len(tokens))
    assert np.abs(shown - expected.attentions[1][0, 1].numpy()).max() <= 1e-5
    assert (shown[np.triu_indices(len(tokens), 1)] == 0.0).all()

    assert app.slider(key=links.TOP_K).value == 15
    bars = chart(app, "cm_lm_next")["data"][0]
    softmax = expected.logits[0, -1].double().softmax(dim=-1)
    assert len(bars["y"]) == 15
    assert np.abs(numbers(bars["x"]) - softmax.topk(15).values.numpy()).max() <= 1e-5
    candidates = frame(app, "probability")
    assert candidates["id"].tolist() == softmax.topk(15).indices.tolist()
    assert candidates.index.tolist() == list(range(1, 16))

    app.slider(key=links.TOP_K).set_value(5).run()
    assert_clean(app)
    assert len(chart(app, "cm_lm_next")["data"][0]["y"]) == 5 and app.query_params[links.TOP_K] == "5"

    show_tab(app, links.TAB, THREE_MASKS)  # the encoder part explains itself
    assert_clean(app)
    assert any("needs an encoder" in info.value for info in app.info) and chart_keys(app) == []
    assert chart_keys(show_tab(app, links.TAB, TRAINED)) == SORTER_CHARTS  # the sorter still runs


def test_a_long_text_is_cut_to_the_gpt2s_positions_with_a_notice(gpt2_folder, reference_gpt2):
    long_text = GPT2_TEXT * 10
    app = open_tab(REAL_HEAD, text=long_text, query={"model": str(gpt2_folder), links.TOP_K: "99"})
    assert_clean(app)
    assert any(f"the model reads at most {GPT2_POSITIONS}" in warning.value for warning in app.warning)
    assert len(frame(app, "stands for")) == GPT2_POSITIONS
    tokens, expected = reference_outputs(reference_gpt2, long_text)
    shown = numbers(chart(app, "cm_lm_head")["data"][0]["z"])
    assert shown.shape == (48, 48)  # the focus window of 48 tokens
    assert np.abs(shown - expected.attentions[0][0, 0, :48, :48].numpy()).max() <= 1e-5
    assert app.slider(key=links.TOP_K).value == 10  # 99 is out of range: the default
    softmax = expected.logits[0, -1].double().softmax(dim=-1)
    assert frame(app, "probability")["probability"].to_numpy() == pytest.approx(
        softmax.topk(10).values.numpy(), abs=1e-5
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE_TEXTS))
def test_hostile_sidebar_text_through_the_gpt2_is_never_rendered_and_never_crashes(gpt2_folder, name):
    text = HOSTILE_TEXTS[name]
    app = open_tab(REAL_HEAD, text=text, query={"model": str(gpt2_folder)})
    assert_clean(app)
    if not text.strip():
        assert any("Text to study" in info.value for info in app.info)
        return
    assert text.strip() not in all_markdown(app)
    for key in ("cm_lm_head", "cm_lm_next"):
        labels = chart(app, key)["data"][0]["x" if key == "cm_lm_head" else "y"]
        assert all("<" not in label for label in labels)  # escaped before plotly sees it


def test_a_model_with_no_tokenizer_in_the_sidebar_is_explained_and_the_sorter_still_runs():
    app = open_tab(REAL_HEAD, query={"model": str(RECIPES["sorter"].folder)})
    assert_clean(app)
    assert any("the chosen model is neither" in info.value for info in app.info)
    assert chart_keys(app) == []
    assert chart_keys(show_tab(app, links.TAB, TRAINED)) == SORTER_CHARTS


def test_the_shared_sorter_and_cheater_are_bit_for_bit_unchanged_by_the_page(shipped):
    folders = [str(RECIPES[name].folder) for name in ("sorter", "sorter-cheater")]
    before = [loaders.weights_fingerprint(loaders.get_model(folder).model) for folder in folders]
    app = open_tab(TRAINED, query={links.CHEATER: "true", links.WORD: "quartz"})
    app.text_input(key=links.WORD).set_value("mississi").run()
    assert_clean(app)
    after = [loaders.weights_fingerprint(loaders.get_model(folder).model) for folder in folders]
    assert after == before
    assert before == [loaders.weights_fingerprint(shipped[name].model) for name in ("sorter", "sorter-cheater")]
    assert not any(loaders.get_model(folder).model.training for folder in folders)


def test_a_gpt2_running_out_of_memory_ends_that_page_with_a_message_and_the_next_text_works(gpt2_folder, monkeypatch):
    doomed = "a text the GPT-2 runs out of memory on"
    real = decoding.read_text

    def read(model, tokenizer, text, max_tokens=None):
        if text == doomed:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(model, tokenizer, text, max_tokens)

    monkeypatch.setattr(decoding, "read_text", read)
    app = open_tab(REAL_HEAD, text=doomed, query={"model": str(gpt2_folder)})
    assert_clean(app)
    assert any("ran out of memory" in item.value and f"{len(doomed)} characters" in item.value for item in app.error)
    assert "cm_lm_head" not in chart_keys(app)
    app.session_state["text"] = GPT2_TEXT
    app.run()
    assert_clean(app)
    assert "cm_lm_head" in chart_keys(app), "the same student goes on with another text"


# --- SmolLM2 chosen in the sidebar -------------------------------------------------------------------------


def test_smollm2_named_in_the_sidebar_shows_its_tokens_heads_and_next_tokens_as_lesson_9_computes_them():
    from lessons.common import hosting
    from lessons.language_model import reading

    chat = loaders.get_chat_model()
    text = "The capital of France is"
    app = open_tab(REAL_HEAD, text=text, query={"model": "smollm2-135m-instruct", links.LAYER: "5", links.HEAD: "2"})
    assert_clean(app)
    assert not app.sidebar.error
    ids = chat.encode(text)
    assert frame(app, "stands for")["id"].tolist() == ids
    shown = numbers(chart(app, "cm_lm_head")["data"][0]["z"])
    expected = (
        decoder_attention.layer_attention(reading.decoder_of(chat), tuple(ids), 5).head_weights(2)[0].cpu().numpy()
    )
    assert np.abs(shown - expected).max() <= 1e-6 and (shown[np.triu_indices(len(ids), 1)] == 0.0).all()
    probabilities = reading.next_token_probabilities(reading.decoder_of(chat), tuple(ids))
    best = frame(app, "probability")
    assert best["id"].tolist() == probabilities.topk(10).indices.tolist()
    assert chat.tokenizer.decode([best["id"].iloc[0]]) == " Paris"
    shared = loaders.get_model(hosting.LANGUAGE_MODEL)
    assert shared.model is chat.loaded.model  # the same weights as lesson 9's, not a copy
    assert loaders.get_model("smollm2-135m-instruct") is shared  # any spelling: one model per server


def test_smollm2_in_the_sidebar_reads_at_most_512_tokens_of_a_long_text(cpu_token_cap):
    app = open_tab(REAL_HEAD, text="word " * 2000, query={"model": "SmolLM2-135M-Instruct"})
    assert_clean(app)
    assert len(frame(app, "stands for")) == 512
    assert any("512" in warning.value for warning in app.warning)
