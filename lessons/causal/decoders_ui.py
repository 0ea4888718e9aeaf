"""The decoder parts of the causal-masking lesson: the letter sorter trained here (with, on request, its twin
trained without the mask), and a GPT-2 when one is chosen in the sidebar.

UI only: the numbers come from `lessons.causal.decoding`, the figures from `lessons.causal.decoding_figures`.
Results are cached per (model, word) or (model, text); nothing here changes a model.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from anatomy.attention import AttentionTrace
from anatomy.models import DecoderOnlyLM
from anatomy.training.recipes import RECIPES
from anatomy.training.tasks import SortingTask
from lessons.causal import decoding, links, text
from lessons.causal import decoding_figures as figures
from lessons.common import matrix_figures, next_token_figures, windows
from lessons.common.safe_text import escape_markdown, visible
from lessons.common.ui import linked, loaders, widgets

SORTER, CHEATER = "sorter", "sorter-cheater"
DEFAULT_WORD = "banana"
MAX_WORD_CHARACTERS = 64  # longer than any word the sorter reads, so that it can say why one does not fit
CACHED_WORDS = 32  # per model: a class trying words one after another rarely goes past this
SHOWN_CANDIDATES = 5  # candidates drawn for one generation step (the vocabulary has 30 tokens)
TOP_K_RANGE, DEFAULT_TOP_K = (5, 20), 10


def _folder(name: str) -> str:
    return str(RECIPES[name].folder)


@st.cache_resource(max_entries=2 * CACHED_WORDS, show_spinner=False)
def walkthrough(folder: str, word: str) -> decoding.SortingWalkthrough:
    """One word through the model in `folder`: its greedy answer and teacher forcing (never mutated)."""
    pretrained = loaders.get_model(folder)
    return decoding.walk_through_sorting(pretrained.model_as(DecoderOnlyLM), pretrained.task_as(SortingTask), word)


def _task() -> SortingTask:
    return loaders.get_model(_folder(SORTER)).task_as(SortingTask)


def _tokens(ids) -> list[str]:
    return _task().tokenizer.decode(ids)


# --- The word --------------------------------------------------------------------------------------------


def read_word() -> str | None:
    """The word in the field as the sorter reads it (lowercase, no surrounding spaces), or None with a
    message saying why it cannot be sorted. The entry itself stays in its box, untouched."""
    typed = linked.text_input(
        "A word for the sorter (3 to 8 letters a–z)", links.WORD, DEFAULT_WORD, max_chars=MAX_WORD_CHARACTERS
    )
    word = typed.strip().lower()
    if not word:
        st.info("Type a word of 3 to 8 letters a–z to watch the sorter write its answer.", icon=":material/keyboard:")
        return None
    try:
        _task().check(word)
    except ValueError as error:
        st.error(
            f"The sorter cannot read this entry: {visible(str(error))}. It was trained on words of 3 to "
            "8 lowercase letters a–z only.",
            icon=":material/block:",
        )
        return None
    changes = [
        what
        for what, changed in (
            ("spaces around it dropped", typed.strip() != typed),
            ("capitals lowercased", typed.strip() != word),
        )
        if changed
    ]
    if changes:
        st.caption(f"The sorter reads **{word}** ({', '.join(changes)}): it only knows lowercase letters.")
    return word


# --- The sorter -------------------------------------------------------------------------------------------


def sequence_lines(walk: decoding.SortingWalkthrough) -> tuple[str, str]:
    """Two lines to align: the prompt the model reads, then what it writes after it."""
    prompt = " ".join(_tokens(walk.generation.prompt_ids))
    written = " ".join(_tokens(walk.generation.generated_ids))
    return f"reads   {prompt}", f"writes  {' ' * len(prompt)} {written}"


def steps_table(walk: decoding.SortingWalkthrough) -> pd.DataFrame:
    """One row per generation step: the answer so far, the token taken, and the one it beat."""
    prompt_length = len(walk.generation.prompt_ids)
    rows = []
    for step in walk.generation.steps:
        chosen, runner_up = step.candidates(2)
        so_far = " ".join(_tokens(step.read_ids[prompt_length:]))
        rows.append(
            {
                "answer so far": so_far or "(nothing yet)",
                "writes": _tokens([chosen.token_id])[0],
                "probability": chosen.probability,
                "runner-up": _tokens([runner_up.token_id])[0],
                "runner-up probability": runner_up.probability,
            }
        )
    return pd.DataFrame(rows).rename_axis("step")


STEP_COLUMNS = {  # the runner-up is often millions of times less likely: scientific notation shows by how much
    "probability": st.column_config.NumberColumn(format="%.4f"),
    "runner-up probability": st.column_config.NumberColumn(format="%.2e"),
}


def show_result(walk: decoding.SortingWalkthrough, who: str) -> None:
    written = escape_markdown(walk.written) or "nothing"
    if walk.correct:
        st.success(
            f"The {who} wrote **{written}**: exactly the letters of {walk.word} in order.",
            icon=":material/check_circle:",
        )
    else:
        st.error(
            f"The {who} wrote **{written}**, but {walk.word} sorted is **{walk.expected}**.", icon=":material/cancel:"
        )


def head_shares_table(walk: decoding.SortingWalkthrough) -> pd.DataFrame:
    """Per layer and head: the share of answer steps whose strongest key holds the letter written next."""
    attention = walk.generation.final_attention
    queries = decoding.answer_queries(walk.word, attention.size(-1))
    return layer_head_frame(
        decoding.strongest_key_holds_next_token(
            attention, walk.generation.sequence_ids, queries, decoding.word_positions(walk.word)
        )
    )


def layer_head_frame(values) -> pd.DataFrame:
    """(L, H) numbers as a table, a row per layer and a column per head (both numbered from 0)."""
    return pd.DataFrame(
        values.numpy(),
        index=[f"layer {layer}" for layer in range(values.size(0))],
        columns=[f"head {head}" for head in range(values.size(1))],
    )


def show_generation(word: str) -> decoding.SortingWalkthrough:
    walk = walkthrough(_folder(SORTER), word)
    widgets.show_aligned_lines(sequence_lines(walk))
    show_result(walk, "sorter")
    st.caption("Every step, as the model took it (steps numbered from 0).")
    st.dataframe(steps_table(walk), key="cm_sorter_steps", column_config=STEP_COLUMNS)
    return walk


def show_sorter_heads(walk: decoding.SortingWalkthrough) -> None:
    st.markdown("#### Every head, with the mask")
    read_ids = walk.generation.steps[-1].read_ids
    widgets.show_figure(
        "cm_sorter_heads",
        (_folder(SORTER), walk.word),
        lambda: figures.layer_head_grid(
            walk.generation.final_attention,
            _tokens(read_ids),
            "The sorter's attention at its last step (layers and heads from 0)",
        ),
        about=walk.word,
    )
    st.markdown(text.HEADS_TEXT)
    shares = head_shares_table(walk)
    st.caption(
        "Share of the answer steps at which each head's strongest weight falls on a letter of the "
        "scrambled word equal to the letter written next."
    )
    st.dataframe(shares.style.format("{:.0%}"), key="cm_sorter_head_shares")
    drift = decoding.largest_change_of_earlier_rows(walk.generation)
    st.markdown(
        f"Each step ran the model on a sequence one token longer, yet the rows of the earlier positions never "
        f"moved: across all {len(walk.generation.steps)} steps they differ from the last step's rows by at "
        f"most {drift:.1g}. A new token cannot change what the positions before it computed, because they "
        "cannot see it; this is also why a generator may keep their keys and values instead of recomputing "
        "them."
    )


def show_next_token_choices(walk: decoding.SortingWalkthrough) -> None:
    st.markdown("#### What the model expected at each step")
    steps = walk.generation.steps
    vocabulary = _task().tokenizer.tokens
    labels = [f"step {index} · after {_tokens(step.read_ids[-1:])[0]}" for index, step in enumerate(steps)]
    widgets.show_figure(
        "cm_sorter_next",
        (_folder(SORTER), walk.word),
        lambda: figures.next_token_heatmap(
            walk.generation.step_probabilities,
            labels,
            vocabulary,
            walk.generation.generated_ids,
            "Next-token probabilities, one row per step (✓ the token taken)",
        ),
        about=walk.word,
    )
    chosen = linked.slider(
        "Step to look at", links.STEP, 0, len(steps) - 1, 0, help="Steps are numbered from 0; step 0 reads the prompt."
    )
    candidates = steps[chosen].candidates(SHOWN_CANDIDATES)
    widgets.show_figure(
        "cm_sorter_step",
        (_folder(SORTER), walk.word, chosen),
        lambda: next_token_figures.candidates_figure(
            [_tokens([candidate.token_id])[0] for candidate in candidates],
            [candidate.probability for candidate in candidates],
            f"Step {chosen}: the {SHOWN_CANDIDATES} most likely next tokens",
        ),
        about=walk.word,
    )


# --- The cheater -----------------------------------------------------------------------------------------


def future_table(attention) -> pd.DataFrame:
    """Per layer and head, the average weight a query puts on later positions."""
    return layer_head_frame(decoding.mean_weight_above_diagonal(attention))


def losses_table(honest: decoding.SortingWalkthrough, cheater: decoding.SortingWalkthrough) -> pd.DataFrame:
    """Teacher-forced losses of both models on this word: over the answer's letters, at <eos>, over all."""
    rows = {}
    for name, walk in ((SORTER, honest), (CHEATER, cheater)):
        forced = walk.teacher_forced
        letters = range(forced.first_scored, len(forced.input_ids) - 1)
        rows[name] = {
            "loss on the answer's letters": forced.loss_at(letters),
            "p(<eos>) at the end": float(forced.target_probabilities[-1]),
            "loss over every scored position": forced.loss,
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def show_cheater_looking_ahead(word: str, forced: decoding.TeacherForcedRun) -> None:
    """The cheater's heads on the true sequence, and how much of their weight reads the future."""
    widgets.show_figure(
        "cm_cheater_heads",
        (_folder(CHEATER), word),
        lambda: figures.layer_head_grid(
            forced.attention,
            _tokens(forced.input_ids),
            "The cheater handed the true sequence (teacher forcing): weight right of the edge reads the future",
        ),
    )
    future = future_table(forced.attention)
    queries = decoding.answer_queries(word, len(forced.input_ids))
    next_shares = decoding.strongest_key_is_next_position(forced.attention, queries)
    readers = [f"layer {layer}, head {head}" for layer, head in (next_shares == next_shares.max()).nonzero().tolist()]
    hits = round(float(next_shares.max()) * len(queries))
    st.caption("Average weight each query puts on later positions (the honest sorter: exactly 0 everywhere).")
    st.dataframe(future.style.format("{:.1%}"), key="cm_cheater_future")
    st.markdown(
        f"Averaged over its heads, {float(future.to_numpy().mean()):.0%} of a query's weight lands on the "
        f"future, up to {float(future.to_numpy().max()):.0%} in one head. At {hits} of the {len(queries)} "
        f"answer positions, {' and '.join(readers)} put{'s' if len(readers) == 1 else ''} the largest weight "
        "on position *t* + 1: the very token position *t* is asked to predict."
    )


def show_both_losses(word: str, honest: decoding.SortingWalkthrough, cheater: decoding.SortingWalkthrough) -> None:
    """Both models teacher-forced on the word: position by position, then summed up."""
    forced = cheater.teacher_forced
    positions = range(forced.first_scored, len(forced.input_ids))
    labels = [f"{t}: {_tokens([forced.input_ids[t]])[0]} → {_tokens([forced.target_ids[t]])[0]}" for t in positions]
    widgets.show_figure(
        "cm_cheater_losses",
        (word,),
        lambda: figures.target_loss_figure(
            labels,
            {
                SORTER: honest.teacher_forced.target_losses[list(positions)].numpy(),
                CHEATER: forced.target_losses[list(positions)].numpy(),
            },
            "Teacher forcing: each model's loss on the true next token (log scale; lower is surer)",
        ),
    )
    losses = losses_table(honest, cheater)
    st.dataframe(losses.style.format("{:.2e}"), key="cm_losses")
    letters, end = "loss on the answer's letters", "p(<eos>) at the end"
    st.markdown(
        f"Handed the true answer, the cheater's loss on the answer's letters is {losses.at[CHEATER, letters]:.1e}, "
        f"against the sorter's {losses.at[SORTER, letters]:.1e}: it reads each letter one position ahead. "
        "The last position has nothing after it in its input, and there the cheater gives the `<eos>` it is "
        f"asked for a probability of {losses.at[CHEATER, end]:.2g}. " + text.END_OF_WORD_TEXT
    )


def show_cheater(word: str, honest: decoding.SortingWalkthrough) -> None:
    st.markdown("#### Beside it, the model trained without the mask")
    st.markdown(text.CHEATER_INTRO)
    cheater = walkthrough(_folder(CHEATER), word)
    widgets.show_aligned_lines(sequence_lines(cheater))
    show_result(cheater, "cheater")
    st.dataframe(steps_table(cheater), key="cm_cheater_steps", column_config=STEP_COLUMNS)
    show_cheater_looking_ahead(word, cheater.teacher_forced)
    show_both_losses(word, honest, cheater)
    st.markdown(text.LESSON_TEXT)


def show_trained_decoder() -> None:
    """The sorter on the user's word, step by step, and the cheater beside it when asked for."""
    st.subheader("A real decoder, trained here: the letter sorter")
    st.markdown(text.SORTER_INTRO)
    word = read_word()
    with_cheater = linked.toggle("Run the cheater beside it (the same model trained without the mask)", links.CHEATER)
    if word is None:
        return
    walk = show_generation(word)
    show_sorter_heads(walk)
    show_next_token_choices(walk)
    if with_cheater:
        show_cheater(word, walk)


# --- A GPT-2 or SmolLM2 chosen in the sidebar ---------------------------------------------------------------


def is_language_model(pretrained) -> bool:
    """A decoder (GPT-2 or Llama family, SmolLM2 among them) that comes with its own tokenizer."""
    return pretrained.family == "decoder" and pretrained.tokenizer is not None


# A few texts per server: a run keeps its tokens and one distribution over the vocabulary (SmolLM2: 0.4 MB).
@st.cache_resource(max_entries=8, show_spinner="Running the model…")
def _continuation(reference: str, text: str, token_cap: int) -> decoding.TextContinuation:
    pretrained = loaders.get_model(reference)
    return decoding.read_text(pretrained.model_as(DecoderOnlyLM), pretrained.tokenizer, text, token_cap)


# One layer's queries and keys per entry, on the model's device (any head's map is derived from them when shown):
# at 512 tokens, GPT-2 small's 1.6 MB; SmolLM2's 1.6 MB there and 25 MB at 8,192 tokens.
@st.cache_resource(max_entries=4, show_spinner="Reading the layer's attention…")
def _layer_attention(reference: str, text: str, token_cap: int, layer: int) -> AttentionTrace:
    pretrained = loaders.get_model(reference)
    run = _continuation(reference, text, token_cap)
    return decoding.text_attention(pretrained.model_as(DecoderOnlyLM), run, layer)


def _token_cap(context) -> int:
    """How many tokens the sidebar's language model reads here, as lesson 9's SmolLM2 (`loaders.decoder_token_cap`)."""
    return loaders.decoder_token_cap(context.pretrained.model_as(DecoderOnlyLM))


def language_model_run(context) -> decoding.TextContinuation:
    """The sidebar's text through the sidebar's language model (cut at its positions and the token caps)."""
    return loaders.unless_out_of_memory(
        lambda: _continuation(context.reference, context.text, _token_cap(context)), len(context.text)
    )


def language_model_layer(context, layer: int) -> AttentionTrace:
    """One layer's attention over the sidebar's text, computed when a page first shows it."""
    return loaders.unless_out_of_memory(
        lambda: _layer_attention(context.reference, context.text, _token_cap(context), layer), len(context.text)
    )


def show_language_model_tokens(context, run: decoding.TextContinuation) -> None:
    st.markdown(text.LANGUAGE_MODEL_TEXT.format(cap=_token_cap(context)))
    widgets.truncation_notice(run.tokenized)
    tokenizer = context.pretrained.tokenizer
    table = pd.DataFrame(
        {
            "token": run.tokenized.tokens,
            "id": run.tokenized.input_ids,
            "stands for": [repr(tokenizer.convert_tokens_to_string([token])) for token in run.tokenized.tokens],
        }
    ).rename_axis("position")
    st.dataframe(table, key="cm_lm_tokens")


def show_language_model_head(context, run: decoding.TextContinuation, layer: int, head: int, window_start: int) -> None:
    """One head's real causal attention, in a window of the text when it is long."""
    tokens = run.tokenized.tokens
    weights = language_model_layer(context, layer).head_weights(head)[0]  # (T, T) on the model's device
    window = windows.focus_window(len(tokens), window_start)
    inputs = (context.reference, context.text, layer, head, window.start)
    widgets.show_figure(
        "cm_lm_head",
        inputs,
        lambda: matrix_figures.weights_figure(
            windows.crop(weights, window, window).cpu(),
            [tokens[i] for i in window],
            f"Layer {layer}, head {head}: the model's own causal attention",
            window,
        ),
    )
    future = float(decoding.weight_above_diagonal(weights).max())
    st.caption(
        f"Nothing to mask here: the model ran with its causal mask, and the largest weight any token puts on a "
        f"later one is {future:g}. Each row sums to 1 over the token itself and the tokens before it."
    )


def show_next_tokens(context, run: decoding.TextContinuation) -> None:
    st.markdown("#### What it expects next")
    k = linked.slider("How many candidates", links.TOP_K, *TOP_K_RANGE, DEFAULT_TOP_K)
    candidates = run.candidates(k)
    tokenizer = context.pretrained.tokenizer
    tokens = tokenizer.convert_ids_to_tokens([candidate.token_id for candidate in candidates])
    widgets.show_figure(
        "cm_lm_next",
        (context.reference, context.text, k),
        lambda: next_token_figures.candidates_figure(
            tokens,
            [candidate.probability for candidate in candidates],
            f"The {k} most likely tokens after the text",
            chosen=None,
        ),
    )
    table = pd.DataFrame(
        {
            "token": tokens,
            "stands for": [repr(tokenizer.convert_tokens_to_string([token])) for token in tokens],
            "id": [candidate.token_id for candidate in candidates],
            "probability": [candidate.probability for candidate in candidates],
        },
        index=pd.RangeIndex(1, len(candidates) + 1, name="rank"),
    )
    st.dataframe(table, key="cm_lm_candidates", column_config=widgets.rounded_numbers(table))
    st.caption(
        f"Probabilities are the softmax of the logits at the last token read (position {len(run.tokenized) - 1}), "
        "over the whole vocabulary."
    )
