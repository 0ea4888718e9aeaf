"""The multi-head lesson's sections: every head of a layer, the head view, two sentences compared, statistics
of every head, the split → concatenate → W_O path, and switching a head off.

Every number comes from `lessons.multihead.statistics`, `.ablation` and `.comparison`; every figure from
`lessons.multihead.figures`. This module only chooses what to show and lays it out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from torch import Tensor

from anatomy.models import Encoder
from lessons.common import pooling, windows
from lessons.common.labels import token_label, token_labels
from lessons.common.runs import EncoderRun
from lessons.common.ui import charts, frame, linked, loaders, widgets
from lessons.common.ui.sidebar import StudyContext
from lessons.multihead import ablation, comparison, figures, links, text
from lessons.multihead import statistics as head_stats
from lessons.multihead.ablation import Ablation
from lessons.multihead.statistics import HeadStatistics

SENTENCE_A, SENTENCE_B = "time flies like an arrow", "fruit flies like a banana"
DEFAULT_LAYER, DEFAULT_HEAD, DEFAULT_WORD = 0, 2, "flies"
HEAD_VIEW_HEADS = (DEFAULT_HEAD, 3)  # drawn by default: two heads that link the words differently
MAX_SENTENCE_CHARS = 300
HEAD_VIEW_WINDOW = 48  # tokens drawn in the head view of a long text
HEAD_VIEW_LINES = 300  # lines per head at most


@dataclass(frozen=True)
class LayerView:
    """What every tab reads: the sidebar's text through the model, the layer chosen, and the place of the
    picker of the head studied closely, beside the layer's. Each tab draws that picker (`studied_head`)."""

    context: StudyContext
    run: EncoderRun
    layer: int
    head_column: DeltaGenerator

    @property
    def num_heads(self) -> int:
        return self.context.pretrained.config.num_heads

    def studied_head(self) -> int:
        return choose_studied_head(self)


def layer_view(context: StudyContext) -> LayerView | None:
    """The text's traced run and the layer to study; None (with a note) when the model in use or the
    sidebar's text cannot give them."""
    if context.pretrained.family != "encoder" or context.pretrained.tokenizer is None:
        st.info(text.NEEDS_ENCODER, icon=":material/info:")
        return None
    if not context.has_text:
        st.info(text.NEEDS_TEXT, icon=":material/edit:")
        return None
    run = loaders.get_encoder_run(context.reference, context.text)
    widgets.truncation_notice(run.tokenized)
    config = context.pretrained.config
    left, right = st.columns(2)
    layer = linked.selectbox(
        "Layer",
        links.LAYER,
        range(config.num_layers),
        DEFAULT_LAYER,
        parse=int,
        format_func=lambda value: f"layer {value}",
        container=left,
    )
    return LayerView(context, run, layer, right)


def choose_studied_head(view: LayerView) -> int:
    """The head studied closely, from its picker (at first DEFAULT_HEAD). Only the learner changes it, with the
    picker or a button that offers a head: it is the same head on every tab."""
    return linked.selectbox(
        "Head to study closely",
        links.HEAD,
        range(view.num_heads),
        DEFAULT_HEAD % view.num_heads,
        parse=int,
        format_func=head_name,
        container=view.head_column,
        help=text.STUDIED_HEAD_HELP,
    )


# ----- cached builders -------------------------------------------------------------------------------------


@st.cache_resource(max_entries=4, show_spinner=False)
def statistics_of(reference: str, text: str) -> HeadStatistics:
    """Statistics of every head for one text, [CLS] and [SEP] as the tokenizer spells them (cached)."""
    tokenizer = loaders.get_model(reference).tokenizer
    return head_stats.statistics_of_run(
        loaders.get_encoder_run(reference, text), tokenizer.cls_token, tokenizer.sep_token
    )


# Four entries: each holds the text's states twice, about 11 MB at 512 tokens (see lessons/common/memory.py).
@st.cache_resource(max_entries=4, show_spinner="Running the model again without those heads…")
def ablation_of(reference: str, text: str, layer: int, heads_off: tuple[int, ...]) -> Ablation:
    run = loaders.get_encoder_run(reference, text)
    return ablation.ablate_heads(loaders.get_model(reference).model_as(Encoder), run.trace, layer, heads_off)


@st.cache_resource(max_entries=16, show_spinner=False)  # 0.2 MB an entry at 512 tokens
def pooled_layer(reference: str, text: str, layer: int) -> pooling.PooledMap:
    """Every head of one layer, average-pooled for the grid (the weights behind it are not kept: the trace
    recomputes them, 12.6 MB for a 512-token text, so a rerun that only redraws should not ask again)."""
    return pooling.average_pool(layer_weights(loaders.get_encoder_run(reference, text), layer))


def layer_weights(run: EncoderRun, layer: int):
    """(H, T, T) one layer's weights, read from the trace (run.attention_weights would stack all L layers)."""
    return run.trace.layers[layer].attention.weights[0]


# ----- the tabs ----------------------------------------------------------------------------------------------


def show_all_heads(view: LayerView) -> None:
    """Every head of the layer on one colour scale, pooled for a long text, and the studied head in full."""
    st.markdown(text.ALL_HEADS_INTRO)
    run, layer, head = view.run, view.layer, view.studied_head()
    tokens = run.tokenized.tokens
    pooled = pooled_layer(view.context.reference, view.context.text, layer)  # (H, T', S')
    labels = pooling.bin_labels(pooled.row_bins) if pooled.pooled else token_labels(tokens)
    if pooled.pooled:
        st.caption(text.pooled_caption(len(run.tokenized), len(pooled.row_bins), len(pooled.column_bins)))
    titles = [f"head {index}" for index in range(pooled.values.size(0))]
    # Built once per text and layer for every session: the twelve-panel grid is the page's costliest figure.
    widgets.show_figure(
        "mh_all_heads",
        (view.context.reference, view.context.text, layer),
        lambda: figures.head_grid(pooled.values, labels, titles, title=f"Layer {layer}: every head"),
    )

    if linked.toggle(f"Show head {head} alone at full resolution", links.FULL_RESOLUTION):
        full_map = layer_weights(run, layer)[head]  # (T, T)
        chart(
            figures.head_grid(
                full_map[None],
                token_labels(tokens),
                [f"head {head}"],
                columns=1,
                title=f"Layer {layer}, head {head}, every token",
                panel_height=min(900, max(420, 14 * len(run.tokenized))),
            )
        )
    names = labels if pooled.pooled else tokens
    table = widgets.matrix_frame(figures.compact(pooled.values[head]), names, names)
    widgets.download_csv(
        table,
        f"layer{layer}_head{head}_attention.csv",
        label=f"Download head {head}'s map (CSV)",
        key="mh_download_map",
    )


def show_head_view(view: LayerView) -> None:
    """The chosen heads' weights as lines from queries to keys, through a window on a long text."""
    st.markdown(text.HEAD_VIEW_INTRO)
    view.studied_head()  # its picker stands above every tab; this one draws heads of its own choosing
    run, layer, num_heads = view.run, view.layer, view.num_heads
    left, right = st.columns([2, 1])
    heads = sorted(
        linked.multiselect(
            "Heads to draw",
            links.HEADS,
            range(num_heads),
            sorted({head % num_heads for head in HEAD_VIEW_HEADS}),
            format_func=head_name,
            parse=int,
            container=left,
        )
    )
    threshold = linked.float_slider(
        "Draw weights above", links.THRESHOLD, 0.0, 0.9, 0.1, step=0.01, container=right, help=text.THRESHOLD_HELP
    )
    tokens = run.tokenized.tokens
    window = range(len(tokens))
    if len(tokens) > HEAD_VIEW_WINDOW:
        token = choose_token(tokens, "Centre the window on token")
        window = windows.centred_window(len(tokens), token, HEAD_VIEW_WINDOW)
        st.caption(text.window_caption(len(tokens), window, HEAD_VIEW_LINES))
    if not heads:
        st.info(text.CHOOSE_A_HEAD, icon=":material/touch_app:")
        return
    weights = layer_weights(run, layer)[heads][:, window.start : window.stop, window.start : window.stop]
    chart(
        figures.head_view(
            weights,
            tokens[window.start : window.stop],
            heads,
            threshold,
            HEAD_VIEW_LINES,
            first_position=window.start,
            title=f"Layer {layer}: who looks at whom",
        )
    )


def show_two_sentences(view: LayerView) -> None:
    """The studied head in two sentences, then one word they share followed from one to the other, with the
    head in which that word's attention differs most offered one click away."""
    st.markdown(text.TWO_SENTENCES_INTRO)
    left, right = st.columns(2)
    sentences = (
        linked.text_input("Sentence A", links.SENTENCE_A, SENTENCE_A, max_chars=MAX_SENTENCE_CHARS, container=left),
        linked.text_input("Sentence B", links.SENTENCE_B, SENTENCE_B, max_chars=MAX_SENTENCE_CHARS, container=right),
    )
    if not all(sentence.strip() for sentence in sentences):
        view.studied_head()
        st.info(text.NEEDS_TWO_SENTENCES, icon=":material/edit:")
        return
    runs = [loaders.get_encoder_run(view.context.reference, sentence) for sentence in sentences]
    for run in runs:
        widgets.truncation_notice(run.tokenized)
    maps = st.container()  # the maps stand above the word picker, but the word decides their head
    words = comparison.shared_words(*(run.tokenized for run in runs))
    word = None
    if words:
        word = linked.selectbox("Follow the word", links.WORD, words, DEFAULT_WORD, help=text.SHARED_WORD_HELP)
    positions = word_positions(runs, word) if word else None
    shifts = None  # (H,) how far the word's attention moved between the sentences, in every head
    if positions and len(runs[0].tokenized) == len(runs[1].tokenized):  # rows over the same positions compare
        weights = [layer_weights(run, view.layer) for run in runs]  # (H, T, T) each
        shifts = comparison.word_attention_shift(weights[0], weights[1], positions)
    head = view.studied_head()
    pooled = [pooling.average_pool(layer_weights(run, view.layer)[head]) for run in runs]
    labels = [
        pooling.bin_labels(pooled_map.row_bins) if pooled_map.pooled else token_labels(run.tokenized.tokens)
        for pooled_map, run in zip(pooled, runs)
    ]
    with maps:
        if shifts is not None:
            offer_the_head_that_differs_most(view.layer, head, shifts)
        chart(
            figures.map_panels(
                [pooled_map.values for pooled_map in pooled],
                labels,
                ["sentence A", "sentence B"],
                columns=2,
                zmax=1.0,
                title=f"Layer {view.layer}, head {head}, in both sentences",
                panel_height=380,
            ),
            about=sentences[0],
        )
    if word is None or positions is None:
        st.info(text.NO_SHARED_WORD, icon=":material/compare_arrows:")
        return
    follow_word(runs, positions, view.layer, head)


def offer_the_head_that_differs_most(layer: int, head: int, shifts: Tensor) -> None:
    """Which head the followed word's attention moves most in between the sentences, and a button that studies
    it: the tab does not switch heads by itself, since the studied head is the learner's on every tab."""
    most = int(shifts.argmax())
    st.caption(text.largest_shift_caption(layer, most, float(shifts[most])))
    if most != head:
        st.button(
            text.study_head(most),
            key="mh_study_most",
            on_click=linked.set_value,
            args=(links.HEAD, most),
            icon=":material/swap_horiz:",
        )


def word_positions(runs: list[EncoderRun], word: str) -> tuple[int, int]:
    """Where a word both sentences share first occurs in each."""
    return runs[0].tokenized.tokens.index(word), runs[1].tokenized.tokens.index(word)


def follow_word(runs: list[EncoderRun], positions: tuple[int, int], layer: int, head: int) -> None:
    """Where a word both sentences share looks in each, and how alike its vectors stay layer after layer."""
    rows = [layer_weights(run, layer)[head, position] for run, position in zip(runs, positions)]
    chart(
        figures.focus_rows(
            rows,
            [run.tokenized.tokens for run in runs],
            ["sentence A", "sentence B"],
            title=f"Where the word looks: layer {layer}, head {head}",
        ),
        about=runs[0].tokenized.tokens[positions[0]],
    )
    similarity = comparison.word_similarity_by_depth(runs[0].trace, runs[1].trace, positions)
    st.markdown(text.similarity_intro(same_position=positions[0] == positions[1]))
    chart(
        figures.similarity_by_layer(similarity, title="The word's vector, sentence A vs B"),
        about=runs[0].tokenized.tokens[positions[0]],
    )


def show_statistics(view: LayerView) -> None:
    """A table of a few numbers per head for every head of the stack, and one of them as a map."""
    st.markdown(text.STATISTICS_INTRO)
    view.studied_head()  # its picker stands above every tab; this one shows every head
    st.latex(text.STATISTICS_FORMULA)
    st.caption(text.STATISTICS_NOTE)
    statistics = statistics_of(view.context.reference, view.context.text)
    table = pd.DataFrame(statistics.rows())
    st.dataframe(
        table,
        hide_index=True,
        height=320,
        column_config={
            name: st.column_config.NumberColumn(name, format="%.3f", help=help_text)
            for name, help_text in head_stats.STATISTICS.items()
        },
    )
    widgets.download_csv(table.set_index(["layer", "head"]), "head_statistics.csv", key="mh_download_statistics")
    name = linked.selectbox(
        "Statistic on the map",
        links.STATISTIC,
        list(head_stats.STATISTICS),
        "previous_share",
        format_func=head_stats.STATISTICS.__getitem__,
    )
    low, high = head_stats.statistic_range(name, len(view.run.tokenized))
    chart(
        figures.layer_head_map(
            getattr(statistics, name),
            name,
            zmin=low,
            zmax=high,
            title=text.statistic_title(head_stats.STATISTICS[name]),
        ),
        key="mh_statistics_chart",
    )
    show_resting_heads(statistics, len(view.run.tokenized))


def show_resting_heads(statistics: HeadStatistics, tokens: int) -> None:
    """How many heads of each layer rest on [CLS] and on [SEP] (Clark et al. 2019), counted as a decoder's sink
    heads are, with a link to those. Which heads they are, the map above already draws."""
    st.subheader(text.RESTING_HEADING)
    st.markdown(text.RESTING_INTRO)
    lesson = frame.lesson_named(links.LANGUAGE_MODEL_LESSON)
    st.page_link(
        lesson.file,
        label=text.SINKS_LINK_LABEL,
        icon=":material/arrow_forward:",
        query_params=links.LANGUAGE_MODEL_SINKS_TAB,
        help=lesson.numbered_title,
    )
    resting = head_stats.resting_heads(statistics, tokens)
    st.markdown(
        text.resting_total(
            int(resting.sep.sum()), int(resting.cls.sum()), int(resting.either.sum()), resting.heads, resting.threshold
        )
    )
    st.dataframe(pd.DataFrame(resting.rows()), hide_index=True)
    if resting.even_spread_counts:
        st.caption(text.even_spread_note(tokens))
    st.caption(text.RESTING_MAP_NOTE)


def show_recombination(view: LayerView) -> None:
    """One token's head outputs laid side by side and mixed by W_O, checked against the traced numbers."""
    st.markdown(text.RECOMBINATION_INTRO)
    view.studied_head()  # its picker stands above every tab; this one shows every head
    st.latex(text.RECOMBINATION_FORMULA)
    layer = view.layer
    token = choose_token(view.run.tokenized.tokens, "Token")
    attention = ablation.encoder_block(view.context.pretrained.model_as(Encoder), layer).attention
    traced = view.run.trace.layers[layer].attention
    result = ablation.recombine_heads(attention, traced, token)
    heads, head_width = result.head_outputs.shape
    widgets.show_aligned_lines(
        [
            f"trace.layers[{layer}].attention.head_outputs  {tuple(traced.head_outputs.shape)}   (B, H, T, d_head)",
            f"  one token, every head                 {tuple(result.head_outputs.shape)}",
            f"concatenated                            {tuple(result.concatenated.shape)}"
            f"   H × d_head = {heads} × {head_width}",
            f"W_O, b_O                                {tuple(attention.output.weight.shape)}, "
            f"{tuple(result.bias.shape)}",
            f"output = concat · W_Oᵀ + b              {tuple(result.output.shape)}",
        ]
    )
    checks = pd.DataFrame(
        {
            "check": list(text.RECOMBINATION_CHECKS),
            "largest |difference|": [result.concatenation_gap, result.output_gap, result.sum_gap],
        }
    )
    st.dataframe(
        checks, hide_index=True, column_config={"largest |difference|": st.column_config.NumberColumn(format="%.2e")}
    )
    st.caption(text.RECOMBINATION_NOTE)
    chart(figures.recombination(result.head_outputs, result.concatenated, title=f"Layer {layer}: one token's heads"))
    chart(figures.contribution_bars(result.contribution_norms, title="What each head adds to this token via W_O"))
    widgets.download_csv(
        pd.DataFrame(result.contributions.cpu().numpy(), index=[f"head {h}" for h in range(heads)]),
        f"layer{layer}_token{token}_head_contributions.csv",
        label="Download each head's contribution (CSV)",
        key="mh_download_contributions",
    )


def show_switch_off(view: LayerView) -> None:
    """The text run again with some heads of the layer switched off, and how far everything after moved."""
    st.markdown(text.SWITCH_OFF_INTRO)
    run, layer, head = view.run, view.layer, view.studied_head()
    heads_off = tuple(
        sorted(
            linked.multiselect(
                f"Heads of layer {layer} to switch off",
                links.HEADS_OFF,
                range(view.num_heads),
                [head],
                format_func=head_name,
                parse=int,
            )
        )
    )
    result = ablation_of(view.context.reference, view.context.text, layer, heads_off)
    final = result.final_similarity
    first, second, third = st.columns(3)
    first.metric(text.CLS_METRIC, f"{float(final[0]):.4f}", help=text.CLS_METRIC_HELP)
    second.metric(text.LEAST_SIMILAR_METRIC, f"{float(final.min()):.4f}", help=text.LEAST_SIMILAR_METRIC_HELP)
    third.metric(text.SHIFT_METRIC, f"{float(result.attention_shift.max()):.3f}", help=text.SHIFT_METRIC_HELP)
    if not heads_off:
        st.caption(text.NOTHING_SWITCHED_OFF)
    chart(
        figures.token_similarity_map(
            result.token_similarity,
            run.tokenized.tokens,
            title="Each vector with vs without the heads",
        ),
        key="mh_similarity_chart",
    )
    st.caption(text.untouched_caption(layer))
    chart(
        figures.layer_head_map(
            result.attention_shift,
            "attention shift",
            zmin=0.0,
            zmax=max(0.05, float(result.attention_shift.max())),
            title="How far each later head's attention moved",
            scale_title="½ Σ|p − q|",
        ),
        key="mh_shift_chart",
    )
    st.caption(text.SHIFT_NOTE)
    similarity = pd.DataFrame(
        result.token_similarity.cpu().numpy().T,
        columns=["embeddings", *[f"after layer {index}" for index in range(result.token_similarity.size(0) - 1)]],
    )
    similarity.insert(0, "token", run.tokenized.tokens)
    widgets.download_csv(
        similarity, f"ablation_layer{layer}_heads{'-'.join(map(str, heads_off))}.csv", key="mh_download_ablation"
    )


SECTIONS = {  # the tabs, in order, each drawn from the same LayerView
    links.ALL_HEADS: show_all_heads,
    links.HEAD_VIEW: show_head_view,
    links.TWO_SENTENCES: show_two_sentences,
    links.HEAD_STATISTICS: show_statistics,
    links.SPLIT_AND_RECOMBINE: show_recombination,
    links.SWITCH_OFF: show_switch_off,
}


# ----- small helpers ---------------------------------------------------------------------------------------


def choose_token(tokens, label: str) -> int:
    """The token followed: one choice, shared by the head view and the recombination tab."""
    return linked.selectbox(
        label,
        links.TOKEN,
        range(len(tokens)),
        1 if len(tokens) > 2 else 0,
        parse=int,
        format_func=lambda index: token_label(index, tokens[index]),
    )


def head_name(head: int) -> str:
    return f"head {head}"


def chart(figure, about: str | None = None, key: str | None = None) -> None:
    charts.show(figure, key, about=about)
