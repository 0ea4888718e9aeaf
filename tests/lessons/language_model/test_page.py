"""The language-model page, driven headlessly: what it shows is what SmolLM2 in `anatomy` computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from anatomy.generation import Sampling, generate
from harness.apptest import (
    HOSTILE_TEXTS,
    all_markdown,
    assert_clean,
    chart,
    chart_keys,
    literal_texts,
    numbers,
    open_page,
    source_shown,
    table_with,
)
from lessons.common import attention_sinks, decoder_attention
from lessons.language_model import heads, links, logit_lens, reading, text, ui, writing

pytestmark = pytest.mark.slow  # every test runs SmolLM2 through the page (seconds each)

PAGE = "lesson_pages/language_model.py"
PROMPT = "The capital of France is"
NEXT_TOKEN, WRITING, ATTENTION, CHAT = links.TABS[:4]


def open_tab(tab: str, study_text: str = PROMPT, **query: str):
    app = open_page(PAGE, text=study_text, query={links.TAB: tab, **query})
    assert_clean(app)
    return app


def shown_text(app) -> list[str]:
    """Every literal block the page drew (user text and model output go there, never to markdown)."""
    return literal_texts(app)


def test_the_page_opens_on_the_next_token_and_runs_only_the_open_tab():
    app = open_page(PAGE, text=PROMPT)
    assert_clean(app)
    assert app.title[0].value == "A real language model: SmolLM2"
    assert app.session_state[links.TAB] == NEXT_TOKEN
    assert chart_keys(app) == ["lm_next"]
    assert chart_keys(open_tab(WRITING)) == ["lm_writing"]
    assert chart_keys(open_tab(ATTENTION)) == ["lm_attention"]
    assert chart_keys(open_tab(CHAT)) == []
    markdown = all_markdown(app)
    for change in ("RMSNorm", "Rotary positions", "Grouped-query attention", "SwiGLU", "tied embeddings", "4-bit"):
        assert change in markdown


def test_the_texts_tokens_are_shown_with_their_ids_and_readable_pieces(chat):
    tokens = table_with(open_tab(NEXT_TOKEN), "piece")
    assert tokens["id"].tolist() == chat.encode(PROMPT) == [504, 3575, 282, 4649, 314]
    assert tokens["piece"].tolist() == ["The", "·capital", "·of", "·France", "·is"]


def test_the_top_k_next_tokens_are_the_models_own_probabilities(chat):
    app = open_tab(NEXT_TOKEN, **{links.TOP_K: "5"})
    probabilities = reading.next_token_probabilities(reading.decoder_of(chat), tuple(chat.encode(PROMPT)))
    expected = probabilities.topk(5)
    table = table_with(app, "probability")
    assert table["id"].tolist() == expected.indices.tolist()
    assert np.allclose(table["probability"].to_numpy(), expected.values.double().cpu().numpy(), atol=1e-6)
    assert table["token"].tolist()[0] == "·Paris" and table["probability"].iloc[0] == pytest.approx(0.773, abs=0.005)
    (bars,) = chart(app, "lm_next")["data"]
    assert np.allclose(numbers(bars["x"]), expected.values.double().cpu().numpy(), atol=1e-6)


def test_greedy_writing_shows_what_generate_writes(chat):
    app = open_tab(WRITING, **{links.NEW_TOKENS: "8"})
    model, ids = reading.decoder_of(chat), chat.encode(PROMPT)
    expected = generate(model, decoder_attention.as_batch(ids, model), 8)[0, len(ids) :].tolist()
    steps = table_with(app, "token written")
    assert steps["id"].tolist() == expected
    assert shown_text(app)[0] == PROMPT + chat.tokenizer.decode(expected, skip_special_tokens=False)
    assert steps["probability"].tolist() == steps["model's probability"].tolist()  # greedy reshapes nothing
    assert steps["best candidates"].iloc[0].startswith("·Paris 0.77")


def test_writing_stops_where_smollm2_ends_its_turn_and_shows_the_end_token_as_a_special_token(chat):
    app = open_tab(WRITING, **{links.NEW_TOKENS: "40"})
    steps = table_with(app, "token written")
    # " Paris.\n\nThe answer is: 2018-01-22 12:12:53." and then the end of its turn, at step 29 of 40.
    assert len(steps) == 30 and steps["id"].iloc[-1] in chat.stop_token_ids
    assert steps["token written"].iloc[-1] == "<|im_end|>" and steps["kind"].tolist() == ["text"] * 29 + ["special"]
    assert shown_text(app)[0].endswith("12:12:53.<|im_end|>")
    (said,) = [item.value for item in app.info]
    assert said.startswith("At step 29 SmolLM2 wrote `<|im_end|>`") and "writing stopped there" in said
    assert len(chart(app, "lm_writing")["data"][0]["x"]) == 30


def test_keeping_on_past_the_end_of_the_turn_writes_every_token_asked_for_and_says_where_the_turn_ended(chat):
    app = open_tab(WRITING, **{links.NEW_TOKENS: "40", links.PAST_END_OF_TURN: "true"})
    steps = table_with(app, "token written")
    model, ids = reading.decoder_of(chat), chat.encode(PROMPT)
    assert steps["id"].tolist() == generate(model, decoder_attention.as_batch(ids, model), 40)[0, len(ids) :].tolist()
    assert steps.loc[steps["kind"] == "special", "token written"].tolist() == ["<|im_end|>", "<|im_start|>"]
    (said,) = [item.value for item in app.info]
    assert said.startswith("At step 29 SmolLM2 wrote `<|im_end|>`") and "A chat would have stopped there" in said
    assert app.query_params[links.PAST_END_OF_TURN] == "True"


def test_sampled_writing_with_a_seed_is_the_same_on_every_visit_and_matches_generate(chat):
    query = {
        links.MODE: "sampled",
        links.NEW_TOKENS: "10",
        links.TEMPERATURE: "1.2",
        links.SAMPLE_TOP_K: "40",
        links.TOP_P: "0.9",
        links.SEED: "7",
    }
    first, second = open_tab(WRITING, **query), open_tab(WRITING, **query)
    written = table_with(first, "token written")["id"].tolist()
    assert table_with(second, "token written")["id"].tolist() == written
    model, ids = reading.decoder_of(chat), chat.encode(PROMPT)
    sampling = Sampling(temperature=1.2, top_k=40, top_p=0.9)
    expected = generate(
        model,
        decoder_attention.as_batch(ids, model),
        10,
        sampling=sampling,
        generator=torch.Generator(device=model.embeddings.token.weight.device).manual_seed(7),
    )
    assert written == expected[0, len(ids) :].tolist()
    other_seed = open_tab(WRITING, **{**query, links.SEED: "8"})
    assert table_with(other_seed, "token written")["id"].tolist() != written


def test_a_class_writing_forty_texts_keeps_every_answer_while_its_students_look_at_other_tabs(chat, monkeypatch):
    written = []
    monkeypatch.setattr(writing, "write", lambda model, ids, *settings: written.append(ids) or ())
    texts = [f"Student {number} asks SmolLM2 to go on" for number in range(40)]
    ui.steps_after.clear()
    try:
        for study_text in texts * 2:  # each student writes, opens another tab, and comes back to the Writing tab
            ui.steps_after(study_text, 512, 20, False, 1.0, 0, 1.0, 0, False)
    finally:
        ui.steps_after.clear()  # the stub's empty answers must not stay for the other tests
    assert len(written) == len(set(written)) == 40  # each text written once: the second visits found theirs


def test_the_attention_map_is_the_models_trace_for_that_layer_and_head(chat):
    app = open_tab(ATTENTION, **{links.LAYER: "12", links.HEAD: "4"})
    model, ids = reading.decoder_of(chat), chat.encode(PROMPT)
    with torch.no_grad():
        trace = model(decoder_attention.as_batch(ids, model), trace=True).recorded_trace
    expected = trace.layers[12].attention.weights[0, 4].double().cpu().numpy()
    (heatmap,) = chart(app, "lm_attention")["data"]
    shown = numbers(heatmap["z"])
    assert np.allclose(shown, expected, atol=1e-3)  # the figure rounds its cells to 3 decimals
    assert (shown[np.triu_indices(5, 1)] == 0).all()
    assert np.allclose(shown.sum(axis=1), 1, atol=5e-3)
    assert heatmap["x"] == ["0: The", "1: ·capital", "2: ·of", "3: ·France", "4: ·is"]
    assert any("key/value head 1" in caption.value for caption in app.caption)  # heads 3–5 share key head 1


def test_a_long_text_is_cut_at_512_tokens_and_its_attention_seen_through_a_window(cpu_token_cap):
    long_text = " ".join(f"w{index}" for index in range(400))  # 1,490 tokens: "w" and digits
    app = open_tab(ATTENTION, long_text, **{links.WINDOW_START: "100"})
    assert any("reads the first 512" in warning.value for warning in app.warning)
    (heatmap,) = chart(app, "lm_attention")["data"]
    assert numbers(heatmap["z"]).shape == (48, 48) and heatmap["x"][0].startswith("100: ")
    assert app.query_params[links.WINDOW_START] == "100"


def test_a_long_texts_whole_map_is_the_heads_map_averaged_over_blocks_with_the_window_framed(chat, cpu_token_cap):
    long_text = " ".join(f"w{index}" for index in range(400))  # cut at 512 tokens: 64 blocks of 8
    app = open_tab(ATTENTION, long_text, **{links.LAYER: "5", links.HEAD: "2", links.WINDOW_START: "100"})
    assert chart_keys(app) == ["lm_attention_whole", "lm_attention"]
    ids = tuple(chat.encode(long_text)[:512])
    full = decoder_attention.layer_attention(reading.decoder_of(chat), ids, 5).head_weights(2)[0].double().cpu().numpy()
    by_loop = np.array(
        [[full[8 * row : 8 * row + 8, 8 * column : 8 * column + 8].mean() for column in range(64)] for row in range(64)]
    )
    figure = chart(app, "lm_attention_whole")
    (heatmap,) = figure["data"]
    shown = numbers(heatmap["z"])
    assert shown.shape == (64, 64)
    assert np.allclose(shown, by_loop, atol=1e-6)
    assert np.allclose(shown.sum(axis=1) * 8, 1, atol=1e-4)  # a block of rows still spreads all of its weight
    assert (shown[np.triu_indices(64, 1)] == 0).all()  # the mask, block by block
    (frame,) = figure["layout"]["shapes"]  # the window, positions 100–147: blocks 12 to 18
    assert (frame["x0"], frame["x1"], frame["y0"], frame["y1"]) == (11.5, 18.5, 11.5, 18.5)
    captions = [caption.value for caption in app.caption]
    assert any("a block of 8 queries × 8 keys" in line and "positions 100–147" in line for line in captions)


def test_the_chat_template_tokens_are_the_tokenizers_with_special_tokens_marked(chat):
    message = "What is the capital of France?"
    app = open_tab(CHAT, **{links.MESSAGE: message, links.REPLY: "true"})
    prompt = chat.chat_prompt([{"role": "user", "content": message}])
    assert shown_text(app)[0] == ui.with_line_breaks_marked(prompt)
    assert shown_text(app)[0].replace("↵\n", "\n").replace("↵", "\n") == prompt  # every line break, marked
    tokens = [frame.value for frame in app.dataframe if "kind" in frame.value.columns][-1]  # after the text's own
    assert tokens["id"].tolist() == chat.encode(prompt)
    assert tokens.loc[tokens["kind"] == "special", "piece"].tolist() == ["<|im_start|>", "<|im_end|>"] * 2 + [
        "<|im_start|>"
    ]
    _, read = reading.chat_tokens(chat, message)
    steps = writing.write(reading.decoder_of(chat), read.ids, writing.MAX_NEW_TOKENS, stop_token_ids={2})
    assert shown_text(app)[1] == chat.tokenizer.decode(writing.written_ids(steps), skip_special_tokens=True)
    assert "Paris" in shown_text(app)[1]


def test_every_choice_goes_into_the_link_and_the_link_restores_it():
    query = {
        links.MODE: "sampled",
        links.NEW_TOKENS: "5",
        links.TEMPERATURE: "0.5",
        links.SAMPLE_TOP_K: "20",
        links.TOP_P: "0.8",
        links.SEED: "42",
    }
    app = open_tab(WRITING, **query)
    assert {key: app.query_params[key] for key in query} == query
    app.slider(key=links.NEW_TOKENS).set_value(3).run()
    assert app.query_params[links.NEW_TOKENS] == "3"
    assert len(table_with(app, "token written")) == 3
    app = open_tab(ATTENTION, **{links.LAYER: "29", links.HEAD: "8"})
    app.selectbox(key=links.HEAD).set_value(2).run()
    assert (app.query_params[links.LAYER], app.query_params[links.HEAD]) == ("29", "2")


@pytest.mark.parametrize(
    ("key", "value", "default"),
    [
        (links.LAYER, "30", 0),
        (links.HEAD, "-1", 0),
        (links.TOP_K, "lots", 10),
        (links.NEW_TOKENS, "41", 20),
        (links.MODE, "beam", "greedy"),
        (links.TEMPERATURE, "0", 0.8),
        (links.TOP_P, "nan", 0.95),
        (links.SEED, "1e99", 0),
    ],
)
def test_a_link_value_the_page_cannot_use_falls_back_to_the_default(key, value, default):
    tab = {links.TOP_K: NEXT_TOKEN, links.LAYER: ATTENTION, links.HEAD: ATTENTION}.get(key, WRITING)
    app = open_tab(tab, **{links.MODE: "sampled", key: value})
    assert app.session_state[key] == default


def test_empty_text_gets_a_message_and_no_model_run():
    app = open_tab(NEXT_TOKEN, "")
    assert chart_keys(app) == []
    assert [info.value for info in app.info].count(text.EMPTY_TEXT) == 2  # above the tabs and in the open tab


def test_whitespace_is_text_to_a_language_model_and_its_pieces_are_made_visible():
    app = open_tab(NEXT_TOKEN, "  \n\t")
    assert table_with(app, "piece")["piece"].tolist() == ["··", "↵⇥"]  # one merged piece for newline + tab
    assert chart_keys(app) == ["lm_next"]


@pytest.mark.parametrize("name", ["html", "markdown", "script", "right_to_left", "emoji"])
def test_hostile_text_is_shown_literally_never_rendered(name):
    hostile = HOSTILE_TEXTS[name]
    for tab in (NEXT_TOKEN, WRITING):
        app = open_tab(tab, hostile, **{links.NEW_TOKENS: "3"})
        assert hostile not in all_markdown(app)
        assert not [element for element in app.markdown if element.proto.allow_html]
    assert shown_text(app)[0].startswith(hostile)  # the writing tab shows the text exactly, then what was written
    chat_app = open_tab(CHAT, PROMPT, **{links.MESSAGE: hostile})
    assert hostile in shown_text(chat_app)[0] and hostile not in all_markdown(chat_app)


# --- Sinks, induction heads, the logit lens -------------------------------------------------------------------


def test_the_sink_maps_are_every_heads_first_token_importance_and_the_page_quotes_their_sink_rates(chat):
    app = open_tab(links.SINKS)
    model = reading.decoder_of(chat)
    on_text = heads.first_token_importance(model, tuple(chat.encode(PROMPT)))
    special = set(chat.tokenizer.get_added_tokens_decoder())
    random_ids = heads.random_token_ids(heads.RANDOM_TOKENS, model.config.vocab_size, special)
    on_random = heads.first_token_importance(model, random_ids)
    assert chart_keys(app) == ["lm_sinks_text", "lm_sinks_random"]
    for key, expected in (("lm_sinks_text", on_text), ("lm_sinks_random", on_random)):
        (drawn,) = chart(app, key)["data"]
        assert np.allclose(numbers(drawn["z"]), expected.numpy(), atol=1e-9)
    markdown = all_markdown(app)
    assert f"Sink rate on your text: **{attention_sinks.sink_rate(on_text):.1%}**" in markdown
    assert f"Sink rate on random tokens: **{attention_sinks.sink_rate(on_random):.1%}**" in markdown


def test_removing_the_linked_layers_sink_shows_the_losses_and_guesses_the_experiment_computes(chat):
    assert not [frame for frame in open_tab(links.SINKS).dataframe if "next token" in frame.value.columns]
    app = open_tab(links.SINKS, **{links.SINK_REMOVAL: "true", links.SINK_LAYER: "5"})
    removal = heads.remove_sink(reading.decoder_of(chat), tuple(chat.encode(PROMPT)), 5)
    table = table_with(app, "loss (nats per token)")
    assert table.index.tolist() == ["as trained", "layer 5 without its sink"]
    assert table["loss (nats per token)"].tolist() == pytest.approx([removal.loss_before, removal.loss_after])
    assert table["next token"].tolist()[0] == "·Paris"
    assert table["its probability"].tolist() == pytest.approx(
        [removal.next_before.probability, removal.next_after.probability]
    )


def test_the_induction_tab_ranks_the_heads_and_shows_the_copies_losses_with_and_without_them(chat):
    app = open_tab(links.INDUCTION)
    test = heads.induction_test(reading.decoder_of(chat), chat.tokenizer.get_added_tokens_decoder())
    (drawn,) = chart(app, "lm_induction")["data"]
    assert np.allclose(numbers(drawn["z"]), test.induction.numpy(), atol=1e-9)
    ranking = table_with(app, "induction head")
    best = heads.ranked(test.induction, 5)
    assert ranking["induction head"].tolist() == [f"layer {layer}, head {head}" for layer, head, _ in best]
    assert ranking["induction score"].tolist() == pytest.approx([score for _, _, score in best])
    assert ranking["previous-token score"].tolist() == pytest.approx(
        [s for *_, s in heads.ranked(test.previous_token, 5)]
    )
    losses = table_with(app, "as trained")
    assert losses["as trained"].tolist() == pytest.approx([test.losses.first, test.losses.second])
    assert losses.iloc[:, 1].tolist() == pytest.approx(
        [test.losses_without_them.first, test.losses_without_them.second]
    )


def test_the_logit_lens_table_and_divergences_are_the_lenss_and_end_on_the_models_own_guess(chat):
    app = open_tab(links.LOGIT_LENS)
    lens = logit_lens.logit_lens(reading.decoder_of(chat), tuple(chat.encode(PROMPT)))
    table = table_with(app, "4: ·is")
    assert table.index.tolist()[0] == "embeddings" and table.index.tolist()[-1] == "after layer 29"
    assert table["4: ·is"].tolist()[-1] == "·Paris 0.77"
    assert table["4: ·is"].tolist()[-2] == "·capital 0.20"  # one layer earlier, the lens still reads "capital"
    drawn = chart(app, "lm_lens_divergence")["data"]
    assert len(drawn) == 5
    for column, line in enumerate(drawn):
        assert np.allclose(numbers(line["y"]), lens.divergence[1:, column].numpy(), atol=1e-9)
        assert numbers(line["y"])[-1] == 0.0
    assert "is the lens's best token from layer 29 on" in all_markdown(app)


def test_a_link_to_an_earlier_lens_position_reads_the_positions_before_it():
    long_text = "One, two, three, four, five, six, seven, eight, nine, ten."
    app = open_tab(links.LOGIT_LENS, long_text, **{links.LENS_END: "9"})
    table = app.dataframe[-1].value  # the lens table, after the tokens table
    assert [column.split(":")[0] for column in table.columns] == [str(position) for position in range(2, 10)]


def test_where_the_device_allows_more_tokens_a_long_text_is_read_whole_and_its_map_pooled(chat, monkeypatch):
    """On a CUDA GPU the lesson reads all 8,192 positions; here the CPU's cap is raised to 1,024 to run the same
    path: nothing is cut, the whole map is pooled into blocks of 13, the window is cut from the full map."""
    monkeypatch.setattr(decoder_attention, "CPU_MAX_TOKENS", 1024)
    long_text = " ".join(f"w{index}" for index in range(230))  # 810 tokens: "w" and digits
    app = open_tab(ATTENTION, long_text, **{links.LAYER: "5", links.HEAD: "2", links.WINDOW_START: "700"})
    assert not app.warning  # not cut
    ids = tuple(chat.encode(long_text))
    assert len(ids) == 810
    full = decoder_attention.layer_attention(reading.decoder_of(chat), ids, 5).head_weights(2)[0].double().cpu().numpy()
    whole = numbers(chart(app, "lm_attention_whole")["data"][0]["z"])
    edges = [(start, min(start + 13, 810)) for start in range(0, 810, 13)]  # 63 blocks, the last of 4 tokens
    by_loop = np.array([[full[r0:r1, c0:c1].mean() for c0, c1 in edges] for r0, r1 in edges])
    assert whole.shape == (63, 63) and np.allclose(whole, by_loop, atol=1e-6)
    (heatmap,) = chart(app, "lm_attention")["data"]
    assert heatmap["x"][0].startswith("700: ") and heatmap["x"][-1].startswith("747: ")
    assert np.abs(numbers(heatmap["z"]) - full[700:748, 700:748]).max() <= 1e-6
    assert any("The whole map of 810 tokens" in caption.value for caption in app.caption)


def test_a_cut_notice_says_whether_the_model_or_this_server_set_the_limit():
    by_model = text.cut_notice(9000, 8192, 8192)
    assert "9,000 tokens" in by_model and "at most 8,192" in by_model and "server" not in by_model
    by_server = text.cut_notice(800, 512, 8192)
    assert "reads the first 512" in by_server and "could read 8,192" in by_server and "server stops at 512" in by_server


# One function each tab runs, shown under it (and under no other tab).
CODE_OF_EACH_TAB = {
    links.NEXT_TOKEN: "lessons.language_model.reading.next_token_probabilities",
    links.WRITING: "anatomy.generation.generation_loop",
    links.ATTENTION: "lessons.common.decoder_attention.layer_attention",
    links.CHAT: "lessons.language_model.reading.chat_tokens",
    links.SINKS: "lessons.language_model.heads.remove_sink",
    links.INDUCTION: "lessons.language_model.heads.induction_test",
    links.LOGIT_LENS: "lessons.language_model.logit_lens.logit_lens",
}


@pytest.mark.parametrize("tab", links.TABS)
def test_the_code_under_the_page_is_the_code_of_the_open_tab(tab):
    shown = source_shown(open_tab(tab))
    assert CODE_OF_EACH_TAB[tab] in shown
    assert not {name for other, name in CODE_OF_EACH_TAB.items() if other != tab} & set(shown)
