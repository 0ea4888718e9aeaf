"""The encoder lesson's sections: attention of every layer and head, the hidden states, a word in two contexts,
where the layer norm sits, the feed-forward network, a classification head and what the stack is made of.

Every number comes from `lessons.encoder.analysis` and `lessons.encoder.tables`, every figure from
`lessons.encoder.figures`. This module only chooses what to show and lays it out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from anatomy.blocks import ResidualBlock
from anatomy.config import TransformerConfig, parameter_breakdown
from anatomy.feedforward import FeedForward
from anatomy.models import MaskedLMHead, SequenceClassifier
from anatomy.trace import ModelTrace
from lessons.common import pooling
from lessons.common.next_token_figures import candidates_figure
from lessons.common.runs import EncoderRun
from lessons.common.ui import linked, loaders, widgets
from lessons.common.ui.sidebar import StudyContext
from lessons.encoder import analysis, figures, fill_mask, links, tables, text

FULL_MAP_TOKENS = 128  # longer texts show the full-resolution map a window of query rows at a time
WINDOW_TOKENS = 64  # rows in such a window, and tokens in the feed-forward heatmap
DEMO_MAX_TOKENS = 128  # the untrained demonstration reads at most this many tokens
MAX_SENTENCE_CHARS = 300
MIN_LABELS, MAX_LABELS, DEFAULT_LABELS = 2, 10, 2
MAX_FILL_TOP_K, DEFAULT_FILL_TOP_K = 20, 5


@dataclass(frozen=True)
class TracedText:
    """The sidebar's text traced through the loaded encoder: what every section reads."""

    context: StudyContext
    run: EncoderRun

    @property
    def config(self) -> TransformerConfig:
        return self.context.pretrained.config

    @property
    def trace(self) -> ModelTrace:
        return self.run.trace

    @property
    def tokens(self) -> tuple[str, ...]:
        return self.run.tokenized.tokens

    @property
    def depths(self) -> list[str]:
        return tables.depth_labels(self.config.num_layers)

    def show_figure(
        self, chart_key: str, choices: tuple, build: Callable[[], go.Figure], about: str | None = None
    ) -> None:
        """Draw a figure built once per model, text and `choices` (every other input `build` reads)."""
        widgets.show_figure(chart_key, (self.context.reference, self.context.text, *choices), build, about)


def traced_text(context: StudyContext) -> TracedText:
    """The sidebar's text through the model (from the cache), after saying so if the text was cut short."""
    run = loaders.get_encoder_run(context.reference, context.text)
    widgets.truncation_notice(run.tokenized)
    return TracedText(context, run)


# Both are keyed like the traced run they come from, and hold as many entries.
@st.cache_resource(max_entries=loaders.MAX_CACHED_RUNS, show_spinner=False)
def pooled_attention(reference: str, studied: str) -> pooling.PooledMap:
    return loaders.get_encoder_run(reference, studied).over_layers(analysis.pool_overview)


@st.cache_resource(max_entries=loaders.MAX_CACHED_RUNS, show_spinner="Running two untrained stacks…")
def norm_growth(reference: str, studied: str) -> dict[str, analysis.NormGrowth]:
    model_config = loaders.get_model(reference or loaders.DEFAULT_MODEL_NAME).config
    embeddings = loaders.get_encoder_run(reference, studied).trace.embeddings.output[:, :DEMO_MAX_TOKENS]
    return {placement: analysis.main_path_growth(embeddings, model_config, placement) for placement in ("pre", "post")}


# ----- choices several sections share ----------------------------------------------------------------------


def choose_layer(traced: TracedText, container: DeltaGenerator | None = None) -> int:
    return linked.slider(
        "Layer", links.LAYER, 0, traced.config.num_layers - 1, 0, container=container, help=text.LAYER_HELP
    )


def choose_window(traced: TracedText, limit: int) -> tuple[int, int]:
    """The tokens [start, end) to show: all of them up to `limit`, else a window of WINDOW_TOKENS."""
    num_tokens = len(traced.tokens)
    if num_tokens <= limit:
        return 0, num_tokens
    start = linked.slider(
        "First token shown",
        links.WINDOW_START,
        0,
        num_tokens - WINDOW_TOKENS,
        0,
        help=text.window_help(num_tokens, WINDOW_TOKENS),
    )
    return start, start + WINDOW_TOKENS


# ----- attention of every layer and head -------------------------------------------------------------------


def show_attention(traced: TracedText) -> None:
    config, tokens = traced.config, traced.tokens
    st.markdown(text.attention_intro(config.num_layers, config.num_heads))
    layer_column, head_column = st.columns(2)
    layer = choose_layer(traced, layer_column)
    head = linked.slider("Head", links.HEAD, 0, config.num_heads - 1, 0, container=head_column, help=text.HEAD_HELP)
    pooled = pooled_attention(traced.context.reference, traced.context.text)
    if pooled.pooled:
        st.caption(text.pooled_caption(len(tokens), len(pooled.row_bins), tables.block_sizes(pooled.row_bins)))
    traced.show_figure(
        "enc_overview_chart",
        (layer, head),
        lambda: figures.attention_overview(pooled.values, pooled.row_bins, tokens, selected=(layer, head)),
    )
    st.subheader(f"Layer {layer}, head {head}, every weight")
    start, end = choose_window(traced, FULL_MAP_TOKENS)

    def head_map():  # (T, T): the trace recomputes it from Q and K, so only when a figure or a download needs it
        return traced.trace.layers[layer].attention.weights[0, head]

    traced.show_figure(
        "enc_map_chart",
        (layer, head, start, end),
        lambda: figures.attention_map(head_map()[start:end].cpu(), tokens[start:end], tokens, first_query=start),
    )
    widgets.download_csv(
        lambda: widgets.matrix_frame(head_map().cpu().numpy(), tokens, tokens),
        f"attention_layer{layer}_head{head}.csv",
        key="enc_download_attention",
    )
    widgets.show_source(analysis.pool_overview, pooling.average_pool, pooling.balanced_bins, pooling.pooling_matrix)


# ----- the hidden states -----------------------------------------------------------------------------------


def show_hidden_states(traced: TracedText) -> None:
    hidden_states, tokens, depths = traced.run.output.hidden_states, traced.tokens, traced.depths
    st.markdown(text.HIDDEN_STATES_INTRO)
    st.latex(text.COSINE_FORMULA)
    norms = analysis.hidden_state_norms(hidden_states).cpu()
    traced.show_figure(
        "enc_norms_chart",
        (),
        lambda: figures.layer_token_heatmap(
            norms, depths, tokens, "‖h‖ of every token at every depth", value_name="‖h‖", value_format=".2f"
        ),
    )
    compare = linked.segmented("Compare each depth with", links.COMPARE, text.COMPARISONS, "previous")
    similarity, rows = tables.self_similarity(hidden_states, depths, compare)
    similarity = similarity.cpu()
    traced.show_figure(
        "enc_similarity_chart",
        (compare,),
        lambda: figures.layer_token_heatmap(
            similarity,
            rows,
            tokens,
            "cosine similarity of each token with itself",
            zmax=1.0,
            value_name="cosine",
            value_format=".3f",
        ),
    )
    row, mean = analysis.least_similar_row(similarity)
    st.caption(text.least_similar(rows[row], mean))
    norms_column, similarity_column = st.columns(2)
    with norms_column:
        widgets.download_csv(
            lambda: widgets.matrix_frame(norms.numpy(), depths, tokens),
            "hidden_state_norms.csv",
            "Norms (CSV)",
            key="enc_download_norms",
        )
    with similarity_column:
        widgets.download_csv(
            lambda: widgets.matrix_frame(similarity.numpy(), rows, tokens),
            "token_self_similarity.csv",
            "Similarities (CSV)",
            key="enc_download_similarity",
        )
    widgets.show_source(
        analysis.hidden_state_norms, analysis.similarity_to_previous_layer, analysis.similarity_to_embeddings
    )


# ----- one word in two contexts ----------------------------------------------------------------------------


def show_word_in_context(traced: TracedText) -> None:
    st.markdown(text.WORD_INTRO)
    column_a, column_b, column_word = st.columns([5, 5, 3])
    sentence_a = linked.text_input(
        "Sentence A", links.SENTENCE_A, text.SENTENCE_A, max_chars=MAX_SENTENCE_CHARS, container=column_a
    )
    sentence_b = linked.text_input(
        "Sentence B", links.SENTENCE_B, text.SENTENCE_B, max_chars=MAX_SENTENCE_CHARS, container=column_b
    )
    word = linked.text_input("Word", links.WORD, text.WORD, max_chars=MAX_SENTENCE_CHARS, container=column_word)
    if not word.strip():
        st.info(text.NEEDS_WORD, icon=":material/edit:")
        return
    found_a = locate_word(traced.context, "A", sentence_a, word)
    found_b = locate_word(traced.context, "B", sentence_b, word)
    if found_a is None or found_b is None:
        return
    (run_a, word_a), (run_b, word_b) = found_a, found_b
    st.dataframe(tables.word_pieces_table([word_a, word_b]), hide_index=True)
    explain_the_match(word_a.location, word_b.location)
    similarity = analysis.contextual_similarity(
        run_a.output.hidden_states,
        word_a.location.token_indices,
        run_b.output.hidden_states,
        word_b.location.token_indices,
    ).cpu()
    first, last = float(similarity[0]), float(similarity[-1])
    metrics = st.columns(2)
    metrics[0].metric("At the embeddings", f"{first:.3f}")
    metrics[1].metric(f"After layer {traced.config.num_layers - 1}", f"{last:.3f}", delta=f"{last - first:+.3f}")
    traced.show_figure(
        "enc_word_chart",
        (sentence_a, sentence_b, word),
        lambda: figures.word_similarity_chart(similarity, traced.depths, "cosine of the word, sentence A vs B"),
        about=word,
    )
    frame = tables.similarity_by_depth(similarity, traced.depths)
    st.dataframe(frame.T.round(4))
    widgets.download_csv(frame, "word_in_context.csv", key="enc_download_word")
    widgets.show_source(analysis.locate_word, analysis.word_vectors, analysis.contextual_similarity)


def locate_word(
    context: StudyContext, name: str, sentence: str, word: str
) -> tuple[EncoderRun, tables.FoundWord] | None:
    """The word's place in sentence `name` (and that sentence's traced run), or None after saying what is wrong."""
    if not sentence.strip():
        st.info(text.empty_sentence(name), icon=":material/edit:")
        return None
    sentence_run = loaders.get_encoder_run(context.reference, sentence)
    widgets.truncation_notice(sentence_run.tokenized)
    location = analysis.locate_word(sentence, sentence_run.tokenized, word)
    if location is None:
        st.warning(text.word_not_in(name), icon=":material/search_off:")
        return None
    if not location.token_indices:
        st.warning(text.word_cut_from(name), icon=":material/content_cut:")
        return None
    return sentence_run, tables.FoundWord(name, sentence_run.tokenized.tokens, location)


def explain_the_match(*locations: analysis.WordLocation) -> None:
    """Say which word pieces stand for the word when it is not simply one whole token, found once."""
    if any(len(location.token_indices) > 1 for location in locations):
        st.caption(text.SEVERAL_PIECES)
    if not all(location.whole_word for location in locations):
        st.caption(text.INSIDE_A_LONGER_WORD)
    if max(location.occurrences for location in locations) > 1:
        st.caption(text.SEVERAL_OCCURRENCES)


# ----- where the layer norm sits ---------------------------------------------------------------------------


def show_layer_norm(traced: TracedText) -> None:
    config = traced.config
    unit_norm = tables.unit_norm(config.width)
    st.markdown(text.LAYER_NORM_INTRO)
    post_column, pre_column = st.columns(2)
    with post_column:
        st.markdown(text.placement_heading("Post-LN", config.norm_placement == "post"))
        st.latex(text.POST_LN_FORMULA)
    with pre_column:
        st.markdown(text.placement_heading("Pre-LN", config.norm_placement == "pre"))
        st.latex(text.PRE_LN_FORMULA)
    st.markdown(text.unit_length(unit_norm))
    st.subheader("What the loaded model computes")
    layer = choose_layer(traced)
    checkpoints = analysis.stack_main_path_norms(traced.trace).cpu()
    traced.show_figure(
        "enc_main_path_chart",
        (layer,),
        lambda: figures.main_path_chart(
            checkpoints,
            analysis.stack_main_path_labels(config.num_layers),
            unit_norm,
            highlight=analysis.stack_main_path_rows(layer),
            title="‖h‖ along the main path (the chosen layer shaded)",
        ),
    )
    layer_norms = analysis.main_path_norms(traced.trace.layers[layer]).cpu()
    frame = widgets.matrix_frame(layer_norms.T.numpy(), traced.tokens, analysis.MAIN_PATH_CHECKPOINTS)
    st.caption(text.layer_norms_caption(layer))
    st.dataframe(frame.round(3))
    st.caption(text.TRAINED_NORMS)
    show_untrained_stacks(traced, unit_norm)
    widgets.show_source(
        analysis.main_path_norms,
        ResidualBlock.sublayer,
        analysis.untrained_layers,
        analysis.main_path_growth,
    )


def show_untrained_stacks(traced: TracedText, unit_norm: float) -> None:
    """The same fresh stack built pre-LN and post-LN, fed this text: how long the main path's vectors grow."""
    st.subheader("An untrained demonstration")
    growth = norm_growth(traced.context.reference, traced.context.text)
    st.markdown(
        text.demonstration_intro(analysis.DEMO_LAYERS, analysis.DEMO_SEED, min(len(traced.tokens), DEMO_MAX_TOKENS))
    )
    pre, post = growth["pre"], growth["post"]
    traced.show_figure(
        "enc_growth_chart",
        (),
        lambda: figures.norm_growth_chart(
            pre.norms.cpu(),
            post.norms.cpu(),
            unit_norm,
            None if pre.final_norms is None else pre.final_norms.cpu(),  # never None: pre-LN ends with a norm
            "mean ‖h‖ on the main path, untrained stacks",
        ),
    )
    summary = tables.growth_summary(growth)
    st.markdown(text.measured_growth(summary, analysis.DEMO_LAYERS))
    growth_frame = summary.table()
    st.dataframe(growth_frame.T.round(3))
    widgets.download_csv(growth_frame, "norm_growth.csv", key="enc_download_growth")


# ----- the feed-forward network ----------------------------------------------------------------------------


def show_feed_forward(traced: TracedText) -> None:
    config, tokens = traced.config, traced.tokens
    st.markdown(text.feed_forward_intro(config.width, config.ff_width))
    st.latex(text.FEED_FORWARD_FORMULA)
    layer_column, count_column = st.columns(2)
    layer = choose_layer(traced, layer_column)
    count = linked.slider("Neurons shown", links.NEURONS, 8, 128, 32, container=count_column, help=text.NEURONS_HELP)
    activation = traced.trace.layers[layer].feed_forward.hidden_activation[0]  # (T, F)
    neurons = analysis.most_active_neurons(activation, count)
    start, end = choose_window(traced, WINDOW_TOKENS)
    shown = activation[start:end][:, neurons].cpu()
    fractions = analysis.positive_fraction_by_layer(traced.trace).cpu()
    st.metric(
        f"Activations above 0 in layer {layer}",
        f"{float(fractions[layer]):.1%}",
        help=f"Over all {len(tokens)} tokens × {config.ff_width} neurons.",
    )
    traced.show_figure(
        "enc_activation_chart",
        (layer, count, start),
        lambda: figures.activation_heatmap(
            shown,
            tokens[start:end],
            neurons.tolist(),
            first_token=start,
            title=f"Layer {layer}: the {len(neurons)} most active of {config.ff_width} neurons",
        ),
    )
    widgets.download_csv(
        lambda: widgets.matrix_frame(shown.numpy(), tokens[start:end], [f"n{i}" for i in neurons.tolist()]),
        f"feed_forward_layer{layer}.csv",
        key="enc_download_activations",
    )
    traced.show_figure(
        "enc_fraction_chart",
        (layer,),
        lambda: figures.positive_fraction_chart(fractions, layer, "share of activations above 0, per layer"),
    )
    widgets.show_source(
        FeedForward.forward,
        analysis.most_active_neurons,
        analysis.positive_fraction,
        analysis.positive_fraction_by_layer,
    )


# ----- a classification head -------------------------------------------------------------------------------


def show_classifier(traced: TracedText) -> None:
    config = traced.config
    body = analysis.encoder_body(traced.context.pretrained.model)
    has_pooler = body.pooler is not None
    st.markdown(text.CLASSIFIER_INTRO)
    st.latex(text.CLASSIFIER_FORMULA)
    st.warning(text.UNTRAINED_HEAD, icon=":material/casino:")
    num_labels = linked.number_input(
        "Number of labels K",
        links.LABELS,
        MIN_LABELS,
        MAX_LABELS,
        DEFAULT_LABELS,
        requirement=f"a whole number from {MIN_LABELS} to {MAX_LABELS}",
    )
    classifier = analysis.untrained_classifier(config.width, num_labels)
    head = analysis.apply_classifier_head(body, traced.run.output.last_hidden_state, classifier)
    st.markdown(text.head_shapes(has_pooler, config.width, num_labels, float(head.probabilities.sum())))
    traced.show_figure(
        "enc_cls_chart",
        (),
        lambda: figures.cls_vector_chart(
            head.cls_vector.cpu(), head.summary.cpu() if has_pooler else None, "the vector the head reads"
        ),
    )
    traced.show_figure(
        "enc_logits_chart",
        (num_labels,),
        lambda: figures.classifier_output_chart(head.logits.cpu(), head.probabilities.cpu()),
    )
    st.dataframe(tables.classifier_table(head), hide_index=True)
    st.caption(text.CLASSIFIER_CAPTION)
    widgets.show_source(analysis.apply_classifier_head, analysis.untrained_classifier, SequenceClassifier)


# ----- filling [MASK] --------------------------------------------------------------------------------------


def show_fill_mask(traced: TracedText) -> None:
    """The words the model's masked-LM head puts behind each mask; without a head, which checkpoints have one.
    The code is shown either way: it is what would run."""
    _fill_the_masks(traced)
    widgets.show_source(fill_mask.fill_masks, MaskedLMHead.forward)


def _fill_the_masks(traced: TracedText) -> None:
    pretrained = traced.context.pretrained
    st.markdown(text.FILL_MASK_INTRO)
    st.latex(text.FILL_MASK_FORMULA)
    why_not = fill_mask.why_no_fill(pretrained)
    if why_not is not None:
        st.info(why_not, icon=":material/info:")
        return
    top_k = linked.slider(
        "Words shown per mask", links.FILL_TOP_K, 1, MAX_FILL_TOP_K, DEFAULT_FILL_TOP_K, help=text.FILL_TOP_K_HELP
    )
    filled = fill_mask.fill_the_text(pretrained, traced.run, top_k)
    if isinstance(filled, str):  # the text has no mask
        st.info(filled, icon=":material/edit:")
        return
    if filled.left_out:
        st.caption(text.masks_left_out(filled.num_masks, len(filled.fills)))
    widgets.show_literal(fill_mask.filled_in(traced.run, filled, pretrained.tokenizer), label=text.FILLED_TEXT_LABEL)
    st.dataframe(tables.fill_mask_frame(filled, traced.run), hide_index=True)
    st.caption(text.FILL_MASK_TABLE_CAPTION)
    for number, fill in enumerate(filled.fills, start=1):
        traced.show_figure(
            f"enc_fill_chart_{number}",
            (top_k,),
            partial(candidates_figure, fill.tokens, fill.probabilities, text.mask_chart_title(number, fill.position)),
        )


# ----- what the stack is made of ---------------------------------------------------------------------------


def show_parameters(traced: TracedText) -> None:
    model = traced.context.pretrained.model
    rows = analysis.parameter_table(traced.config, model)
    total = analysis.total_parameters(model)
    st.markdown(text.PARAMETERS_INTRO)
    st.latex(text.PARAMETERS_FORMULA)
    parameters = tables.parameter_frame(rows, total)
    st.dataframe(parameters, hide_index=True, column_config=counts_with_separators(parameters))
    st.markdown(text.parameter_sum(total, analysis.in_millions(total)))
    mismatched = tables.mismatched_components(rows)
    if mismatched:
        st.caption(text.mismatched_rows(mismatched))
    st.subheader("The model zoo, computed from configurations")
    zoo = tables.zoo_frame(analysis.model_zoo())
    st.dataframe(zoo, hide_index=True, column_config=counts_with_separators(zoo))
    st.caption(text.ZOO_CAPTION)
    widgets.show_source(parameter_breakdown, analysis.count_parameters_by_component)


def counts_with_separators(frame: pd.DataFrame) -> dict:
    """Column settings that show every whole-number column of `frame` with the reader's thousands separator
    (11,720,448): the numbers themselves stay numbers, to sort by and to copy."""
    return {name: st.column_config.NumberColumn(format="localized") for name in frame.select_dtypes("integer")}
