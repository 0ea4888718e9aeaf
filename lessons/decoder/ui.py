"""The decoder lesson's sections: the reverser on the chosen word (its three attentions, its answer written
one token at a time) and the three families of transformer.

Every number comes from `lessons.decoder.reversal` and `lessons.decoder.families`, every table from
`lessons.decoder.tables`, every figure from `lessons.decoder.figures`. The word's results are built once per
word by a cached function; the family figure and table once per server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from anatomy.checkpoints.pretrained import ModelLoadError, PretrainedModel
from anatomy.config import parameter_count
from anatomy.seq2seq import EncoderDecoder
from anatomy.training.recipes import RECIPES
from anatomy.training.tasks import EOS, SPECIAL_TOKENS, LetterTask, ReversalTask
from lessons.common.safe_text import escape_markdown
from lessons.common.ui import charts, linked, loaders, widgets
from lessons.decoder import families, figures, links, tables, text
from lessons.decoder.reversal import ReversalLesson, WordCheck, check_word, reverse_word

MAX_ENTRY = 100  # characters the field takes: room for a pasted sentence, to say why it is refused
CACHED_WORDS = 16


@dataclass(frozen=True)
class WordView:
    """Everything the page shows about one word, built once (never mutated after)."""

    lesson: ReversalLesson
    figures: dict
    steps: pd.DataFrame


def reverser() -> PretrainedModel:
    return loaders.get_model(str(RECIPES["reverser"].folder))


# ----- the word -----------------------------------------------------------------------------------------


def reverse_the_chosen_word() -> WordView | None:
    """The reverser described, the word field, and the word's results (None when the reverser could not be
    loaded or the field holds no word it can read: the message above says why)."""
    try:
        pretrained = reverser()
    except ModelLoadError as error:
        st.error(text.reverser_failed(str(error)), icon=":material/error:")
        return None
    config, task = pretrained.model_as(EncoderDecoder).config, pretrained.task_as(ReversalTask)
    st.markdown(
        text.reverser_description(
            config,
            parameter_count(config),
            len(task.tokenizer.tokens),
            task.alphabet,
            SPECIAL_TOKENS,
        )
    )
    checked = choose_word(task)
    return word_view(checked.word) if checked.problem is None else None


def choose_word(task: LetterTask) -> WordCheck:
    """The word field, in the link under `links.WORD`. A word typed by hand stays in the field whatever it
    holds, and the page says what the reverser cannot read in it; a link must carry a word it can read."""
    entry = linked.text_input(
        text.word_label(task.min_length, task.max_length),
        links.WORD,
        text.DEFAULT_WORD,
        max_chars=MAX_ENTRY,
        usable=lambda value: check_word(task, value).problem is None,
        requirement=text.word_requirement(task.min_length, task.max_length),
    )
    checked = check_word(task, entry)
    if checked.problem:
        st.warning(escape_markdown(checked.problem), icon=":material/spellcheck:")
        widgets.show_literal(entry, "You typed:")
    elif checked.lowercased:
        st.caption(text.lowercased(checked.word))
    return checked


@st.cache_resource(max_entries=CACHED_WORDS, show_spinner="Running the reverser…")
def word_view(word: str) -> WordView:
    pretrained = reverser()
    task = pretrained.task_as(ReversalTask)
    lesson = reverse_word(pretrained.model_as(EncoderDecoder), task, word)
    source, target = lesson.source_tokens, lesson.target_tokens
    step_rows = tables.step_labels(lesson)
    return WordView(
        lesson,
        {
            "encoder": figures.heads_figure(
                lesson.encoder_attention, source, source, "Encoder self-attention (S × S, no mask)", "source", "source"
            ),
            "decoder": figures.heads_figure(
                lesson.decoder_attention,
                target,
                target,
                "Decoder masked self-attention (T × T, causal)",
                "target",
                "target",
            ),
            "cross": figures.heads_figure(
                lesson.cross_attention,
                step_rows,
                source,
                "Cross-attention (T × S): each step's row over the source letters",
                "step: input → written",
                "source",
                marks=lesson.alignment,
                mark_name="the source letter this step reads most",
            ),
            "distribution": figures.distribution_figure(
                lesson.probabilities,
                step_rows,
                task.tokenizer.tokens,
                [step.token_id for step in lesson.steps],
                "Every step's next-token probabilities",
            ),
        },
        tables.steps_table(lesson),
    )


def on_the_word(show: Callable[[WordView], None]) -> Callable[[WordView | None], None]:
    """`show(view)`, or a note that the word above could not be read (view is None)."""

    def show_or_explain(view: WordView | None) -> None:
        if view is None:
            st.info(text.NEEDS_A_WORD, icon=":material/keyboard:")
        else:
            show(view)

    return show_or_explain


# ----- the three attentions -----------------------------------------------------------------------------


def show_attentions(view: WordView) -> None:
    lesson = view.lesson
    st.subheader("Three attentions in one model")
    st.markdown(text.attentions_intro(len(lesson.source_tokens), len(lesson.steps)))
    st.markdown(text.ENCODER_SELF_ATTENTION)
    charts.show(view.figures["encoder"], "dec_encoder_chart", about=lesson.word)
    st.markdown(text.decoder_self_attention(lesson.decoder_self_weight.tolist()))
    charts.show(view.figures["decoder"], "dec_decoder_chart", about=lesson.word)
    st.markdown(text.CROSS_ATTENTION)
    st.latex(text.CROSS_FORMULA)
    charts.show(view.figures["cross"], "dec_cross_chart", about=lesson.word)
    show_alignment(lesson)


def show_alignment(lesson: ReversalLesson) -> None:
    st.markdown(text.alignment(lesson.mirrored_hits, lesson.letter_steps, lesson.mean_weight_on_mirror.tolist()))
    if lesson.has_repeated_letters:
        st.markdown(text.REPEATED_LETTERS)
    last = lesson.steps[-1]
    if last.token == EOS and len(lesson.steps) > len(lesson.source_tokens):
        st.caption(text.end_of_word_step(last.most_read))


# ----- generation ---------------------------------------------------------------------------------------


def show_generation(view: WordView) -> None:
    lesson = view.lesson
    st.subheader("Writing the answer, one token at a time")
    st.markdown(text.GENERATION)
    st.dataframe(
        view.steps,
        hide_index=True,
        key="dec_steps_table",
        column_config={name: st.column_config.NumberColumn(format="%.6f") for name in tables.PROBABILITY_COLUMNS},
    )
    if lesson.correct:
        st.success(text.right_answer(lesson.answer, lesson.word), icon=":material/check_circle:")
    else:
        st.warning(text.wrong_answer(lesson.answer, lesson.expected), icon=":material/cancel:")
    charts.show(view.figures["distribution"], key="dec_distribution_chart", about=lesson.word)
    widgets.download_csv(view.steps.set_index("step"), f"reverser_{lesson.word}_steps.csv", key="dec_steps_csv")


# ----- the three families -------------------------------------------------------------------------------


@st.cache_resource(show_spinner="Counting parameters…")
def families_view():
    figure = figures.family_masks_figure(families.family_masks(), text.FAMILY_MASKS_TITLE)
    return figure, tables.family_table(families.model_table())


def show_families() -> None:
    st.subheader("Three families of transformer")
    for column, family_text in zip(st.columns(3), text.FAMILY_TEXT.values()):
        column.markdown(family_text)
    figure, table = families_view()
    charts.show(figure, key="dec_family_masks_chart", about="")
    st.caption(text.FAMILY_MASKS)
    st.dataframe(
        table,
        hide_index=True,
        key="dec_family_table",
        column_config={tables.PARAMETERS_COLUMN: st.column_config.NumberColumn(format="localized")},
    )
    st.caption(text.PARAMETER_COUNTS)


SECTIONS = {  # tab name -> what it shows, given the word's view (None: no word to show)
    links.ATTENTIONS: on_the_word(show_attentions),
    links.GENERATION: on_the_word(show_generation),
    links.FAMILIES: lambda view: show_families(),
}
