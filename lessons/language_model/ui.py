"""The language-model lesson's sections: SmolLM2 reading the sidebar's text, guessing the next token, writing,
attending, and reading a chat.

Each number comes from a cached builder keyed by everything it reads (text, layer, sampling settings...). They
keep only what a view needs: the top candidates, the steps written, one layer's attention maps; never a full
trace, which at 512 tokens would hold hundreds of MB.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from anatomy.attention import AttentionTrace
from anatomy.generation import Sampling
from lessons.common import attention_sinks, decoder_attention, pooling, safe_text
from lessons.common.labels import token_label
from lessons.common.llm import readable
from lessons.common.llm.readable import ModelTokens
from lessons.common.llm.smollm2 import ChatModel
from lessons.common.ui import charts, linked, loaders, widgets
from lessons.common.windows import FOCUS_WINDOW, crop, focus_window
from lessons.language_model import exercises, figures, heads, links, logit_lens, reading, text, writing

CACHED_TEXTS = 16  # token lists are small: a class trying texts one after another
# Candidates, written steps, sinks, the logit lens: 2-16 kB an entry, the same at 48 and at 512 tokens (none
# grows with the text), so as many as the traced runs (`loaders.MAX_CACHED_RUNS`): a class writing its own
# texts, each student flipping between the tabs, no longer pushes each other's 40-token answers out in seconds.
CACHED_RUNS = 64
CACHED_LAYERS = 4  # one layer's queries and keys, on the model's device: 1.6 MB at 512 tokens, 25 MB at 8,192
MOST_CANDIDATES = 20
DEFAULT_CANDIDATES = 10
DEFAULT_NEW_TOKENS = 20
MAX_MESSAGE_CHARACTERS = 500
DEFAULT_MESSAGE = "What is the capital of France?"
MODES = {"greedy": "Greedy", "sampled": "Sampled"}


def token_cap() -> int:
    """Tokens a text is cut to with SmolLM2 here (`loaders.decoder_token_cap`)."""
    return loaders.decoder_token_cap(reading.decoder_of(model()))


def cut_notice(tokens: ModelTokens) -> str:
    return text.cut_notice(tokens.untruncated_length, len(tokens), reading.decoder_of(model()).config.max_positions)


def model() -> ChatModel:
    return loaders.chat_model_or_stop()


# --- Cached builders ---------------------------------------------------------------------------------------


@st.cache_resource(max_entries=CACHED_TEXTS, show_spinner=False)
def tokens_of(study_text: str, cap: int) -> ModelTokens:
    return readable.text_tokens(model(), study_text, cap)


@st.cache_resource(max_entries=CACHED_RUNS, show_spinner="Running SmolLM2 over the text…")
def candidates_after(study_text: str, cap: int) -> reading.Candidates:
    ids = tokens_of(study_text, cap).ids
    with loaders.FORWARD_GATE:
        probabilities = reading.next_token_probabilities(reading.decoder_of(model()), ids)
    return reading.top_candidates(probabilities, MOST_CANDIDATES)


@st.cache_resource(max_entries=CACHED_RUNS, show_spinner="Writing, one token at a time…")
def steps_after(
    study_text: str,
    cap: int,
    new_tokens: int,
    sampled: bool,
    temperature: float,
    top_k: int,
    top_p: float,
    seed: int,
    past_end_of_turn: bool,
) -> tuple[writing.Step, ...]:
    sampling = Sampling(temperature, top_k or None, top_p) if sampled else None
    chat = model()
    # The chat tab's own stop: the end of the model's turn, unless the learner asks to see what comes after it.
    stop_token_ids = () if past_end_of_turn else chat.stop_token_ids
    ids = tokens_of(study_text, cap).ids
    with loaders.FORWARD_GATE:
        return writing.write(reading.decoder_of(chat), ids, new_tokens, sampling, seed, stop_token_ids)


@st.cache_resource(max_entries=CACHED_LAYERS, show_spinner="Running SmolLM2, keeping one layer's attention…")
def attention_of(study_text: str, cap: int, layer: int) -> AttentionTrace:
    ids = tokens_of(study_text, cap).ids
    with loaders.FORWARD_GATE:
        return decoder_attention.layer_attention(reading.decoder_of(model()), ids, layer)


@st.cache_resource(max_entries=CACHED_TEXTS, show_spinner=False)
def chat_of(message: str, cap: int) -> tuple[str, ModelTokens]:
    return reading.chat_tokens(model(), message, cap)


@st.cache_resource(max_entries=CACHED_RUNS, show_spinner="SmolLM2 is answering…")
def reply_to(message: str, cap: int) -> tuple[writing.Step, ...]:
    chat = model()
    ids = chat_of(message, cap)[1].ids
    with loaders.FORWARD_GATE:
        return writing.write(reading.decoder_of(chat), ids, writing.MAX_NEW_TOKENS, stop_token_ids=chat.stop_token_ids)


@st.cache_resource(max_entries=CACHED_RUNS, show_spinner="Measuring every head of SmolLM2 on your text…")
def sinks_of(study_text: str, cap: int):
    ids = tokens_of(study_text, cap).ids
    with loaders.FORWARD_GATE:
        return heads.first_token_importance(reading.decoder_of(model()), ids)  # (L, H)


def special_ids(chat: ChatModel) -> set[int]:
    return set(chat.tokenizer.get_added_tokens_decoder())


@st.cache_resource(max_entries=1, show_spinner="Measuring every head of SmolLM2 on random tokens…")
def sinks_on_random_tokens():
    chat = model()
    ids = heads.random_token_ids(heads.RANDOM_TOKENS, reading.decoder_of(chat).config.vocab_size, special_ids(chat))
    with loaders.FORWARD_GATE:
        return heads.first_token_importance(reading.decoder_of(chat), ids)  # (L, H)


@st.cache_resource(max_entries=CACHED_RUNS, show_spinner="Reading your text again without that layer's sink…")
def sink_removal(study_text: str, cap: int, layer: int) -> heads.SinkRemoval:
    ids = tokens_of(study_text, cap).ids
    with loaders.FORWARD_GATE:
        return heads.remove_sink(reading.decoder_of(model()), ids, layer)


@st.cache_resource(max_entries=1, show_spinner="Scoring every head on random tokens repeated twice…")
def induction() -> heads.InductionTest:
    chat = model()
    with loaders.FORWARD_GATE:
        return heads.induction_test(reading.decoder_of(chat), special_ids(chat))


@st.cache_resource(max_entries=CACHED_RUNS, show_spinner="Reading every layer through the logit lens…")
def lens_of(study_text: str, cap: int, end: int) -> logit_lens.LogitLens:
    ids = tokens_of(study_text, cap).ids
    positions = range(max(0, end + 1 - logit_lens.POSITIONS), end + 1)
    with loaders.FORWARD_GATE:
        return logit_lens.logit_lens(reading.decoder_of(model()), ids, positions)


def runs_for(study_text: str) -> exercises.PageRuns:
    """The exercises' way to the cached runs on this text: only the open exercise runs the model, and the tab it
    opens afterwards finds the run done."""
    cap = token_cap()
    return exercises.PageRuns(
        candidates=lambda: loaders.unless_out_of_memory(lambda: candidates_after(study_text, cap), len(study_text)),
        attention=lambda layer: loaders.unless_out_of_memory(
            lambda: attention_of(study_text, cap, layer), len(study_text)
        ),
        lens=lambda: loaders.unless_out_of_memory(
            lambda: lens_of(study_text, cap, len(tokens_of(study_text, cap)) - 1), len(study_text)
        ),
        induction=induction,
        sinks=lambda: loaders.unless_out_of_memory(lambda: sinks_of(study_text, cap), len(study_text)),
        sinks_on_random_tokens=sinks_on_random_tokens,
    )


# --- Pieces every section uses -----------------------------------------------------------------------------


def pieces_of(chat: ChatModel, ids) -> list[str]:
    return [readable.piece_of(chat, index) for index in ids]


def kinds(tokens: ModelTokens) -> list[str]:
    return ["special" if special else "text" for special in tokens.special]


def tokens_table(tokens: ModelTokens) -> pd.DataFrame:
    return pd.DataFrame({"id": list(tokens.ids), "piece": list(tokens.pieces), "kind": kinds(tokens)})


def special_rows_marked(table: pd.DataFrame):
    """The table with its special tokens' rows highlighted: markers of the chat format, not text."""
    return table.style.apply(
        lambda row: ["background-color: #E6E2FB; font-weight: 600" if row["kind"] == "special" else ""] * len(row),
        axis=1,
    )


def show_model_facts(chat: ChatModel) -> None:
    config = reading.decoder_of(chat).config
    parameters = sum(parameter.numel() for parameter in reading.decoder_of(chat).parameters())
    st.caption(
        text.MODEL_FACTS.format(
            layers=config.num_layers,
            heads=config.num_heads,
            kv_heads=config.num_kv_heads,
            width=config.width,
            ff_width=config.ff_width,
            vocabulary=config.vocab_size,
            window=config.max_positions,
            parameters=parameters,
        )
    )
    st.caption(text.SIDEBAR_MODEL)


def show_tokens(chat: ChatModel, study_text: str) -> ModelTokens | None:
    """The text's tokens (None, with a message, when there is no text to read)."""
    st.markdown(text.TOKENS)
    tokens = tokens_of(study_text, token_cap())
    if not len(tokens):
        st.info(text.EMPTY_TEXT, icon=":material/edit_note:")
        return None
    if tokens.truncated:
        st.warning(cut_notice(tokens), icon=":material/content_cut:")
    st.caption(f"{len(tokens):,} tokens, positions counted from 0.")
    st.dataframe(tokens_table(tokens), key="lm_tokens_table", height=min(38 + 35 * len(tokens), 300))
    return tokens


# --- The next token ----------------------------------------------------------------------------------------


def show_next_token(chat: ChatModel, study_text: str) -> None:
    st.markdown(text.NEXT_TOKEN)
    k = linked.slider("How many candidates", links.TOP_K, 3, MOST_CANDIDATES, DEFAULT_CANDIDATES)
    found = loaders.unless_out_of_memory(lambda: candidates_after(study_text, token_cap()), len(study_text))
    ids, probabilities = found.ids[:k], found.probabilities[:k]
    pieces = pieces_of(chat, ids)
    widgets.show_figure(
        "lm_next",
        (study_text, token_cap(), k),
        lambda: figures.next_token_figure(pieces, probabilities, f"The {k} most likely next tokens"),
    )
    st.dataframe(
        pd.DataFrame({"token": pieces, "id": list(ids), "probability": list(probabilities)}, index=range(1, k + 1)),
        key="lm_next_table",
        column_config={"probability": st.column_config.NumberColumn(format="%.4f")},
    )
    st.caption(
        f"Together these {k} take {sum(probabilities):.1%} of the probability; the other "
        f"{reading.decoder_of(chat).config.vocab_size - k:,} tokens share the rest."
    )


# --- Writing -----------------------------------------------------------------------------------------------


def choose_sampling() -> tuple[int, bool, float, int, float, int]:
    left, right = st.columns(2)
    mode = linked.segmented("Decoding", links.MODE, MODES, "greedy", container=left)
    new_tokens = linked.slider(
        "New tokens at most", links.NEW_TOKENS, 1, writing.MAX_NEW_TOKENS, DEFAULT_NEW_TOKENS, container=right
    )
    temperature, top_k, top_p, seed = 1.0, 0, 1.0, 0
    if mode == "sampled":
        first, second = st.columns(2)
        temperature = linked.float_slider("Temperature", links.TEMPERATURE, 0.1, 2.0, 0.8, step=0.1, container=first)
        top_p = linked.float_slider("Top-p (1: keep all)", links.TOP_P, 0.05, 1.0, 0.95, step=0.05, container=second)
        third, fourth = st.columns(2)
        top_k = linked.slider("Top-k (0: keep all)", links.SAMPLE_TOP_K, 0, 200, 50, container=third)
        seed = linked.number_input(
            "Seed", links.SEED, 0, 2**31 - 1, 0, container=fourth, requirement="a whole number from 0 to 2147483647"
        )
    return new_tokens, mode == "sampled", temperature, top_k, top_p, seed


def steps_table(chat: ChatModel, steps) -> pd.DataFrame:
    def alternatives(step: writing.Step) -> str:
        pieces = pieces_of(chat, step.candidates)
        return ", ".join(f"{piece} {p:.3f}" for piece, p in zip(pieces, step.candidate_probabilities))

    written = readable.read_tokens(chat, writing.written_ids(steps), max_tokens=len(steps))
    return pd.DataFrame(
        {
            "token written": list(written.pieces),
            "id": list(written.ids),
            "kind": kinds(written),
            "probability": [step.probability for step in steps],
            "model's probability": [step.model_probability for step in steps],
            "tokens in the draw": [step.kept for step in steps],
            "best candidates": [alternatives(step) for step in steps],
        }
    )


def show_writing(chat: ChatModel, study_text: str) -> None:
    st.markdown(text.WRITING)
    settings = choose_sampling()
    past_end_of_turn = linked.toggle(text.PAST_END_OF_TURN, links.PAST_END_OF_TURN, help=text.PAST_END_OF_TURN_HELP)
    steps = loaders.unless_out_of_memory(
        lambda: steps_after(study_text, token_cap(), *settings, past_end_of_turn), len(study_text)
    )
    written = chat.tokenizer.decode(writing.written_ids(steps), skip_special_tokens=False)
    widgets.show_literal(study_text + written, "Your text, then what SmolLM2 wrote after it")
    ended = writing.end_of_turn(steps, chat.stop_token_ids)
    if ended is not None:
        end_token = readable.piece_of(chat, steps[ended].token_id)
        st.info(text.end_of_turn(ended, end_token, went_on=past_end_of_turn), icon=":material/keyboard_return:")
    pieces = pieces_of(chat, writing.written_ids(steps))
    widgets.show_figure(
        "lm_writing",
        (study_text, token_cap(), *settings, past_end_of_turn),
        lambda: figures.writing_figure(
            pieces,
            [step.probability for step in steps],
            [step.model_probability for step in steps],
            "The probability of each token written",
        ),
    )
    st.dataframe(
        special_rows_marked(steps_table(chat, steps)),
        key="lm_steps_table",
        column_config={
            name: st.column_config.NumberColumn(format="%.4f") for name in ("probability", "model's probability")
        },
    )
    st.caption(
        "Rows are steps, counted from 0. *probability*: in the distribution the token was drawn from (after "
        "temperature, top-k and top-p); *model's probability*: in the model's own softmax."
    )


# --- Attention ---------------------------------------------------------------------------------------------


def show_attention(chat: ChatModel, tokens: ModelTokens, study_text: str) -> None:
    st.markdown(text.ATTENTION)
    config = reading.decoder_of(chat).config
    layer, head = linked.layer_and_head(
        config.num_layers, config.num_heads, links.LAYER, links.HEAD, head_label="Query head"
    )
    start, whole_map = 0, None
    if len(tokens) > FOCUS_WINDOW:
        whole_map = st.container()  # above the window's slider, though it frames the window the slider chooses
        start = linked.slider(
            f"Focus window: first of the {FOCUS_WINDOW} tokens shown",
            links.WINDOW_START,
            0,
            len(tokens) - FOCUS_WINDOW,
            0,
            help=f"The text has {len(tokens)} tokens; the chart shows {FOCUS_WINDOW} queries against the same "
            f"{FOCUS_WINDOW} keys.",
        )
    window = focus_window(len(tokens), start)
    layer_trace = loaders.unless_out_of_memory(lambda: attention_of(study_text, token_cap(), layer), len(study_text))
    head_map = layer_trace.head_weights(head)[0]  # (T, T) on the model's device: 268 MB at 8,192 tokens, let go
    if whole_map is not None:
        whole = pooling.average_pool(head_map).on_cpu()  # pooled where it was computed: 64 × 64 cross over
        with whole_map:
            widgets.show_figure(
                "lm_attention_whole",
                (study_text, token_cap(), layer, head, window.start),
                lambda: figures.whole_map_figure(whole, window, f"Layer {layer}, head {head}: the whole text"),
            )
            st.caption(text.whole_map_caption(len(tokens), whole.row_block, window))
    weights = crop(head_map, window, window).cpu()
    st.caption(text.head_group(head, config.num_heads, config.num_kv_heads))
    if len(window) < len(tokens):
        st.caption(
            f"Showing positions {window.start}–{window.stop - 1} of {len(tokens)}. Keys before the window still "
            "take part in each row's softmax, so a row here may sum to less than 1."
        )
    charts.show(
        figures.attention_figure(weights, [tokens.pieces[i] for i in window], window, f"Layer {layer}, head {head}"),
        "lm_attention",
    )


# --- Attention sinks --------------------------------------------------------------------------------------


def sink_caption(importance, where: str) -> str:
    sinks = attention_sinks.sink_count(importance)
    return (
        f"Sink rate {where}: **{attention_sinks.sink_rate(importance):.1%}** ({sinks} of {importance.numel()} "
        f"heads give the first token an importance above {attention_sinks.SINK_THRESHOLD})."
    )


def show_sinks(chat: ChatModel, tokens: ModelTokens, study_text: str) -> None:
    st.markdown(text.SINKS)
    on_text = loaders.unless_out_of_memory(lambda: sinks_of(study_text, token_cap()), len(study_text))
    on_random = sinks_on_random_tokens()
    left, right = st.columns(2)
    with left:
        charts.show(
            figures.layer_head_figure(on_text, f"Your text ({len(tokens)} tokens)", "first-token importance"),
            "lm_sinks_text",
        )
        st.markdown(sink_caption(on_text, "on your text"))
    with right:
        charts.show(
            figures.layer_head_figure(on_random, f"{heads.RANDOM_TOKENS} random tokens", "first-token importance"),
            "lm_sinks_random",
        )
        st.markdown(sink_caption(on_random, "on random tokens"))
    st.markdown(text.SINK_EXPERIMENT)
    if len(tokens) < 2:
        st.info("The loss needs at least two tokens: a first token, and one to predict.", icon=":material/edit_note:")
        return
    # Two more readings of the whole text (one of them edited): at 512 tokens they would double the tab's first
    # paint, so they run when the learner asks.
    if not linked.toggle("Remove one layer's sink", links.SINK_REMOVAL):
        return
    num_layers = reading.decoder_of(chat).config.num_layers
    layer = linked.selectbox(
        "Layer whose sink is removed",
        links.SINK_LAYER,
        range(num_layers),
        3,
        parse=int,
        format_func=lambda i: f"layer {i}",
    )
    removal = loaders.unless_out_of_memory(lambda: sink_removal(study_text, token_cap(), layer), len(study_text))
    st.dataframe(
        pd.DataFrame(
            {
                "loss (nats per token)": [removal.loss_before, removal.loss_after],
                "next token": [readable.piece_of(chat, p.token_id) for p in (removal.next_before, removal.next_after)],
                "its probability": [removal.next_before.probability, removal.next_after.probability],
            },
            index=["as trained", f"layer {layer} without its sink"],
        ),
        key="lm_sink_removal",
        column_config={
            name: st.column_config.NumberColumn(format="%.4f") for name in ("loss (nats per token)", "its probability")
        },
    )


# --- Induction heads ---------------------------------------------------------------------------------------


def ranking_table(test: heads.InductionTest, k: int = 5) -> pd.DataFrame:
    columns: dict[str, list] = {}
    for name, scores in (
        ("induction", test.induction),
        ("previous-token", test.previous_token),
        ("duplicate-token", test.duplicate_token),
    ):
        best = heads.ranked(scores, k)
        columns[f"{name} head"] = [f"layer {layer}, head {head}" for layer, head, _ in best]
        columns[f"{name} score"] = [score for _, _, score in best]
    return pd.DataFrame(columns, index=range(1, k + 1))


def show_induction(chat: ChatModel) -> None:
    st.markdown(text.INDUCTION)
    test = induction()
    charts.show(
        figures.layer_head_figure(
            test.induction, f"Induction scores, {test.copy_length} random tokens twice", "induction score"
        ),
        "lm_induction",
        about="random tokens",
    )
    st.dataframe(
        ranking_table(test),
        key="lm_head_ranking",
        column_config={
            f"{name} score": st.column_config.NumberColumn(format="%.3f")
            for name in ("induction", "previous-token", "duplicate-token")
        },
    )
    st.markdown(text.INDUCTION_ABLATION)
    switched = ", ".join(f"{layer}.{head}" for layer, head in test.switched_off)
    st.dataframe(
        pd.DataFrame(
            {
                "as trained": [test.losses.first, test.losses.second],
                "best five off": [test.losses_without_them.first, test.losses_without_them.second],
            },
            index=["first copy", "second copy"],
        ),
        key="lm_copy_losses",
        column_config={name: st.column_config.NumberColumn(format="%.3f") for name in ("as trained", "best five off")},
    )
    st.caption(
        "Mean loss in nats per token (−log of the probability the model gave the right token), each copy from its "
        f"second token on. Switched off: heads {switched} (layer.head). Guessing uniformly among 49,152 tokens "
        "would cost 10.8."
    )


# --- The logit lens ----------------------------------------------------------------------------------------


def lens_table(chat: ChatModel, lens: logit_lens.LogitLens, tokens: ModelTokens) -> pd.DataFrame:
    columns: dict[str, list] = {}
    for column, position in enumerate(lens.positions):
        cells = []
        for depth in range(lens.top_ids.size(0)):
            piece = readable.piece_of(chat, int(lens.top_ids[depth, column, 0]))
            cells.append(f"{piece} {float(lens.top_probabilities[depth, column, 0]):.2f}")
        columns[token_label(position, tokens.pieces[position])] = cells
    depths = ["embeddings"] + [f"after layer {layer}" for layer in range(lens.top_ids.size(0) - 1)]
    return pd.DataFrame(columns, index=depths)


def show_logit_lens(chat: ChatModel, tokens: ModelTokens, study_text: str) -> None:
    st.markdown(text.LOGIT_LENS)
    end = len(tokens) - 1
    if len(tokens) > logit_lens.POSITIONS:
        end = linked.slider("Last position read", links.LENS_END, logit_lens.POSITIONS - 1, end, end)
    lens = loaders.unless_out_of_memory(lambda: lens_of(study_text, token_cap(), end), len(study_text))
    table = lens_table(chat, lens, tokens)
    st.dataframe(table, key="lm_lens_table", height=38 + 35 * len(table))  # every depth: the last ones matter most
    last = len(lens.positions) - 1
    final = readable.piece_of(chat, int(lens.top_ids[-1, last, 0]))
    settled = logit_lens.settled_depth(lens, last)
    where = "already in the embeddings" if settled == 0 else f"from layer {settled - 1} on"
    st.markdown(
        f"At position {lens.positions[last]}, the final guess {safe_text.code_span(final)} is the lens's best token "
        f"{where}."
    )
    pieces = [tokens.pieces[position] for position in lens.positions]
    charts.show(
        figures.divergence_figure(
            lens.divergence, lens.positions, pieces, "How far each layer's guess is from the last"
        ),
        "lm_lens_divergence",
    )
    embedded = ", ".join(f"{value:.0f}" for value in lens.divergence[0].tolist())
    st.caption(f"Left out of the chart: the embeddings' divergence from the final guess, {embedded} nats.")


# --- The chat template -------------------------------------------------------------------------------------


def with_line_breaks_marked(text: str) -> str:
    """Each line break shown as ↵ at the end of its line: the chat template's line breaks are tokens the model
    reads, and the last one, after "assistant", would otherwise be invisible."""
    marked = text.replace("\n", readable.SHOWN_NEWLINE + "\n")
    return marked[:-1] if marked.endswith("\n") else marked


def show_chat(chat: ChatModel) -> None:
    st.markdown(text.CHAT)
    message = linked.text_input("Your message", links.MESSAGE, DEFAULT_MESSAGE, max_chars=MAX_MESSAGE_CHARACTERS)
    if not message.strip():
        st.info(text.EMPTY_MESSAGE, icon=":material/edit_note:")
        return
    prompt, tokens = chat_of(message, token_cap())
    widgets.show_literal(
        with_line_breaks_marked(prompt),
        f"The text the model reads, laid out by the chat template ({readable.SHOWN_NEWLINE} marks each line break, "
        "as in the tables)",
    )
    if tokens.truncated:
        st.warning(cut_notice(tokens), icon=":material/content_cut:")
    st.caption(f"The same text as {len(tokens)} tokens; the {sum(tokens.special)} special tokens are highlighted.")
    table = tokens_table(tokens)
    st.dataframe(special_rows_marked(table), key="lm_chat_tokens", height=300)
    if linked.toggle("Let SmolLM2 answer (greedy, up to 40 tokens)", links.REPLY):
        steps = reply_to(message, token_cap())
        ids = writing.written_ids(steps)
        answer = chat.tokenizer.decode(ids, skip_special_tokens=True)
        widgets.show_literal(answer, "SmolLM2's answer")
        ended = writing.end_of_turn(steps, chat.stop_token_ids) is not None
        st.caption(
            f"{len(ids)} tokens; it ended with `<|im_end|>`, the end of its turn."
            if ended
            else f"{len(ids)} tokens, cut at the limit before the model closed its turn."
        )


# --- The tabs ----------------------------------------------------------------------------------------------


def _on_the_text(show):
    """A section that reads the sidebar's text: a message instead when there is none."""

    def section(chat: ChatModel, tokens: ModelTokens | None, study_text: str) -> None:
        if tokens is None:
            st.info(text.EMPTY_TEXT, icon=":material/edit_note:")
        else:
            show(chat, tokens, study_text)

    return section


SECTIONS = {
    links.NEXT_TOKEN: _on_the_text(lambda chat, tokens, study_text: show_next_token(chat, study_text)),
    links.WRITING: _on_the_text(lambda chat, tokens, study_text: show_writing(chat, study_text)),
    links.ATTENTION: _on_the_text(show_attention),
    links.CHAT: lambda chat, tokens, study_text: show_chat(chat),
    links.SINKS: _on_the_text(show_sinks),
    links.INDUCTION: lambda chat, tokens, study_text: show_induction(chat),
    links.LOGIT_LENS: _on_the_text(show_logit_lens),
}
