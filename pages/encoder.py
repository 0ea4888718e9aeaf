"""The encoder stack: the studied text through every block of the model, from the embeddings to a
classification head on [CLS], and what the stack is made of."""

from __future__ import annotations

from dataclasses import asdict
from typing import Callable

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from anatomy import stack_analysis
from anatomy.blocks import EncoderLayer
from anatomy.config import parameter_breakdown
from anatomy.models import SequenceClassifier
from anatomy.ui import loaders, sidebar, widgets
from anatomy.viz import encoder_stack as figures

FULL_MAP_TOKENS = 128      # longer texts show the full-resolution map a window of query rows at a time
WINDOW_TOKENS = 64         # rows in such a window, and tokens in the feed-forward heatmap
DEMO_MAX_TOKENS = 128      # the untrained demonstration reads at most this many tokens
MAX_SENTENCE_CHARS = 300
SENTENCE_A, SENTENCE_B, WORD = "time flies like an arrow", "fruit flies like a banana", "flies"
MIN_LABELS, MAX_LABELS, DEFAULT_LABELS = 2, 10, 2

context = sidebar.current()
pretrained = context.pretrained
config = pretrained.config
# Layers and heads are counted from 0, as in `trace.layers[0]` and the checkpoint's `encoder.layer.0`; each hidden
# state is named for the layer that produced it.
DEPTHS = ["embeddings"] + [f"after layer {layer}" for layer in range(config.num_layers)]

st.title("Encoder stack")
st.markdown(
    "An encoder is one block repeated: every token's vector goes through self-attention (tokens read each "
    "other), then through a small feed-forward network (each token on its own), each step wrapped in a "
    "residual connection and a layer norm. This page follows the text in the sidebar through all "
    f"{config.num_layers} blocks of the loaded model. In BERT and MiniLM, block $l$ computes"
)
st.latex(r"h = \mathrm{LayerNorm}\big(x + \mathrm{MultiHead}(x)\big),\qquad "
         r"x_{l+1} = \mathrm{LayerNorm}\big(h + \mathrm{FFN}(h)\big)")

if pretrained.family != "encoder" or pretrained.tokenizer is None:
    st.info("This lesson needs a BERT-family encoder that comes with its tokenizer. Leave the model field in "
            "the sidebar empty to use the embedded all-MiniLM-L6-v2.", icon=":material/info:")
    st.stop()
if not context.has_text:
    st.info("Type a sentence in the sidebar (for example *time flies like an arrow*) to send it through the "
            "stack.", icon=":material/edit:")
    st.stop()

run = loaders.get_encoder_run(context.reference, context.text)
trace = run.output.trace
tokens = run.tokenized.tokens
num_tokens = len(tokens)
widgets.truncation_notice(run.tokenized)


# ---------------------------------------------------------------------------------------------------------
# Cached numbers and figures (each keyed like the traced run it comes from), and choices kept in the URL


@st.cache_resource(max_entries=loaders.MAX_CACHED_RUNS, show_spinner=False)
def pooled_attention(reference: str, text: str) -> stack_analysis.PooledAttention:
    return loaders.get_encoder_run(reference, text).over_layers(stack_analysis.pool_attention)


@st.cache_resource(max_entries=loaders.MAX_CACHED_RUNS, show_spinner="Running two untrained stacks…")
def norm_growth(reference: str, text: str) -> dict[str, stack_analysis.NormGrowth]:
    model_config = loaders.get_model(reference or loaders.DEFAULT_MODEL_NAME).config
    embeddings = loaders.get_encoder_run(reference, text).output.trace.embeddings.output[:, :DEMO_MAX_TOKENS]
    return {placement: stack_analysis.main_path_growth(embeddings, model_config, placement)
            for placement in ("pre", "post")}


def show_figure(chart_key: str, choices: tuple, build: Callable[[], go.Figure]) -> None:
    """Draw a figure built once per model, text and `choices` (every other input `build` reads)."""
    widgets.show_figure(chart_key, (context.reference, context.text, *choices), build)


def choose_layer() -> int:
    return widgets.shared_slider("Layer", "enc_layer", 0, config.num_layers - 1, 0,
                                 "Which of the stacked blocks to look inside, counted from 0.")


def choose_window(limit: int) -> tuple[int, int]:
    """The tokens [start, end) to show: all of them up to `limit`, else a window of WINDOW_TOKENS."""
    if num_tokens <= limit:
        return 0, num_tokens
    start = widgets.shared_slider("First token shown", "enc_window", 0, num_tokens - WINDOW_TOKENS, 0,
                                  f"The text has {num_tokens} tokens; {WINDOW_TOKENS} rows are shown at a time.")
    return start, start + WINDOW_TOKENS


# ---------------------------------------------------------------------------------------------------------
# The sections


def attention_section() -> None:
    st.markdown(
        f"Every block has {config.num_heads} heads, each with its own attention map, so the model computes "
        f"{config.num_layers} × {config.num_heads} = {config.num_layers * config.num_heads} maps for this text. "
        "Row *t* of a map is how token *t* spreads its attention over all tokens. Pick a layer and a head to "
        "see that map in full below; it is framed in red in the overview."
    )
    layer_column, head_column = st.columns(2)
    with layer_column:
        layer = choose_layer()
    with head_column:
        head = widgets.shared_slider("Head", "enc_head", 0, config.num_heads - 1, 0,
                                     "Which head of the chosen layer, counted from 0.")
    pooled = pooled_attention(context.reference, context.text)
    if pooled.is_downsampled:
        sizes = " or ".join(map(str, sorted({end - start for start, end in pooled.blocks})))
        st.caption(f"The text has {num_tokens} tokens, so each small map is average-pooled to {len(pooled.blocks)} × "
                   f"{len(pooled.blocks)}: a cell is the mean weight over a block of {sizes} query tokens × as many "
                   "key tokens. The map below is not pooled.")
    show_figure("enc_overview_chart", (layer, head),
                lambda: figures.attention_overview(pooled.weights, pooled.blocks, tokens, selected=(layer, head)))
    st.subheader(f"Layer {layer}, head {head}, every weight")
    start, end = choose_window(FULL_MAP_TOKENS)

    def head_map():  # (T, T): the trace recomputes it from Q and K, so only when a figure or a download needs it
        return trace.layers[layer].attention.weights[0, head]

    show_figure("enc_map_chart", (layer, head, start, end), lambda: figures.attention_map(
        head_map()[start:end].cpu(), tokens[start:end], tokens, first_query=start))
    widgets.download_csv(lambda: widgets.matrix_frame(head_map().cpu().numpy(), tokens, tokens),
                         f"attention_layer{layer}_head{head}.csv", key="enc_download_attention")
    widgets.show_source(stack_analysis.pool_attention, stack_analysis.pooling_matrix, stack_analysis.token_blocks)


def hidden_states_section() -> None:
    hidden_states = run.output.hidden_states
    st.markdown(
        "Two numbers summarise what the blocks do to one token's vector $h$: its length $\\lVert h\\rVert$, and "
        "how far it turns from one depth to the next, measured by the cosine of the angle between the two "
        "vectors (1: same direction, 0: unrelated)."
    )
    st.latex(r"\cos(h_l, h_m) = \frac{h_l \cdot h_m}{\lVert h_l\rVert\,\lVert h_m\rVert}")
    norms = stack_analysis.hidden_state_norms(hidden_states).cpu()
    show_figure("enc_norms_chart", (), lambda: figures.layer_token_heatmap(
        norms, DEPTHS, tokens, "‖h‖ of every token at every depth", value_name="‖h‖", value_format=".2f"))
    compare = widgets.shared_choice("Compare each depth with", "enc_compare",
                                    {"previous": "the depth before", "embeddings": "the embeddings"}, "previous")
    if compare == "previous":
        similarity = stack_analysis.similarity_to_previous_layer(hidden_states).cpu()
        rows = [f"{above} vs {below}" for above, below in zip(DEPTHS[1:], DEPTHS)]
    else:
        similarity = stack_analysis.similarity_to_embeddings(hidden_states).cpu()
        rows = [f"{label} vs embeddings" for label in DEPTHS]
    show_figure("enc_similarity_chart", (compare,), lambda: figures.layer_token_heatmap(
        similarity, rows, tokens, "cosine similarity of each token with itself", zmax=1.0,
        value_name="cosine", value_format=".3f"))
    row, mean = stack_analysis.least_similar_row(similarity)
    st.caption(f"On this text the lowest mean over tokens is in the row “{rows[row]}”: {mean:.3f}.")
    norms_column, similarity_column = st.columns(2)
    with norms_column:
        widgets.download_csv(lambda: widgets.matrix_frame(norms.numpy(), DEPTHS, tokens),
                             "hidden_state_norms.csv", "Norms (CSV)", key="enc_download_norms")
    with similarity_column:
        widgets.download_csv(lambda: widgets.matrix_frame(similarity.numpy(), rows, tokens),
                             "token_self_similarity.csv", "Similarities (CSV)", key="enc_download_similarity")
    widgets.show_source(stack_analysis.hidden_state_norms, stack_analysis.similarity_to_previous_layer,
                        stack_analysis.similarity_to_embeddings)


def _located_word(name: str, sentence: str, word: str):
    """The word's place in one sentence (and its traced run), or None after saying what is wrong."""
    if not sentence.strip():
        st.info(f"Sentence {name} is empty: type a sentence that uses the word.", icon=":material/edit:")
        return None
    sentence_run = loaders.get_encoder_run(context.reference, sentence)
    widgets.truncation_notice(sentence_run.tokenized)
    location = stack_analysis.locate_word(sentence, sentence_run.tokenized, word)
    if location is None:
        st.warning(f"The word does not occur in sentence {name}. Check the spelling, or type a sentence that uses it.",
                   icon=":material/search_off:")
        return None
    if not location.token_indices:
        st.warning(f"The word occurs in sentence {name}, but none of its tokens reached the model "
                   "(cut off by truncation, or nothing the tokenizer keeps).", icon=":material/content_cut:")
        return None
    return sentence_run, location


def word_section() -> None:
    st.markdown(
        "An embedding table gives a word the same vector wherever it appears; only attention can make it depend "
        "on its neighbours. In the two default sentences *flies* is first a verb, then a noun. Below is the "
        "cosine similarity of the word's vector in the two sentences at every depth: at the embeddings the two "
        "differ only if the word sits at different positions, and each block can pull them further apart."
    )
    column_a, column_b, column_word = st.columns([5, 5, 3])
    with column_a:
        sentence_a = widgets.shared_text_input("Sentence A", "enc_sentence_a", SENTENCE_A, MAX_SENTENCE_CHARS)
    with column_b:
        sentence_b = widgets.shared_text_input("Sentence B", "enc_sentence_b", SENTENCE_B, MAX_SENTENCE_CHARS)
    with column_word:
        word = widgets.shared_text_input("Word", "enc_word", WORD, MAX_SENTENCE_CHARS)
    if not word.strip():
        st.info("Type the word to follow (it must occur in both sentences).", icon=":material/edit:")
        return
    found = [_located_word("A", sentence_a, word), _located_word("B", sentence_b, word)]
    if None in found:
        return
    (run_a, location_a), (run_b, location_b) = found
    st.dataframe(pd.DataFrame([
        {"sentence": name, "word pieces used": " ".join(found_run.tokenized.tokens[i] for i in location.token_indices),
         "positions": ", ".join(map(str, location.token_indices)), "occurrences": location.occurrences}
        for name, (found_run, location) in zip("AB", found)
    ]), hide_index=True)
    if any(len(location.token_indices) > 1 for location in (location_a, location_b)):
        st.caption("The word splits into several word pieces: its vector is the mean of its pieces' vectors.")
    if not (location_a.whole_word and location_b.whole_word):
        st.caption("The word was found only inside a longer word; that word's pieces are compared.")
    if max(location_a.occurrences, location_b.occurrences) > 1:
        st.caption("The word occurs more than once in a sentence; the first occurrence is used.")
    similarity = stack_analysis.contextual_similarity(run_a.output.hidden_states, location_a.token_indices,
                                                      run_b.output.hidden_states, location_b.token_indices).cpu()
    first, last = float(similarity[0]), float(similarity[-1])
    metrics = st.columns(2)
    metrics[0].metric("At the embeddings", f"{first:.3f}")
    metrics[1].metric(f"After layer {config.num_layers - 1}", f"{last:.3f}", delta=f"{last - first:+.3f}")
    show_figure("enc_word_chart", (sentence_a, sentence_b, word), lambda: figures.word_similarity_chart(
        similarity, DEPTHS, "cosine similarity of the word between sentence A and B"))
    frame = pd.DataFrame({"cosine similarity": similarity.numpy()}, index=pd.Index(DEPTHS, name="depth"))
    st.dataframe(frame.T.round(4))
    widgets.download_csv(frame, "word_in_context.csv", key="enc_download_word")
    widgets.show_source(stack_analysis.locate_word, stack_analysis.word_vectors, stack_analysis.contextual_similarity)


def layer_norm_section() -> None:
    width = config.width
    st.markdown(
        "LayerNorm rescales a vector to mean 0 and variance 1 over its D numbers, then applies a learned "
        "scale γ and shift β. The original Transformer and BERT put it *after* each residual sum (post-LN); "
        "GPT-2 and most later models put it *before* each sublayer (pre-LN) and add one final LayerNorm."
    )
    post_column, pre_column = st.columns(2)
    with post_column:
        st.markdown("**Post-LN** (this model)" if config.norm == "post" else "**Post-LN**")
        st.latex(r"h = \mathrm{LN}\big(x + \mathrm{Attn}(x)\big)\\ y = \mathrm{LN}\big(h + \mathrm{FFN}(h)\big)")
    with pre_column:
        st.markdown("**Pre-LN** (this model)" if config.norm == "pre" else "**Pre-LN**")
        st.latex(r"h = x + \mathrm{Attn}\big(\mathrm{LN}(x)\big)\\ y = h + \mathrm{FFN}\big(\mathrm{LN}(h)\big)")
    st.markdown(
        f"Without γ and β a LayerNorm output has length exactly $\\sqrt{{D}} = {width ** 0.5:.1f}$. So in post-LN "
        "the main path is pulled back to a fixed scale twice per block, while in pre-LN nothing ever "
        "normalises the main path: each block only adds to it."
    )
    st.subheader("What the loaded model computes")
    layer = choose_layer()
    checkpoints = stack_analysis.stack_main_path_norms(trace).cpu()
    start = 1 + 4 * layer
    show_figure("enc_main_path_chart", (layer,), lambda: figures.main_path_chart(
        checkpoints, stack_analysis.stack_main_path_labels(config.num_layers), width ** 0.5,
        highlight=(start, start + 4), title="‖h‖ along the main path (the chosen layer shaded)"))
    layer_norms = stack_analysis.main_path_norms(trace.layers[layer]).cpu()
    frame = widgets.matrix_frame(layer_norms.T.numpy(), tokens, stack_analysis.MAIN_PATH_CHECKPOINTS)
    st.caption(f"Layer {layer}: ‖h‖ of every token at each point of the block (from the trace).")
    st.dataframe(frame.round(3))
    st.caption("The residual sums swing widely (the spikes), and every LayerNorm brings the vectors back to a "
               "similar length, block after block. That length is not √D: the learned γ and β set it.")
    st.subheader("An untrained demonstration")
    growth = norm_growth(context.reference, context.text)
    st.markdown(
        f"The same freshly initialised stack of {stack_analysis.DEMO_LAYERS} blocks (seed "
        f"{stack_analysis.DEMO_SEED}, identical weights) is built twice, once pre-LN and once post-LN, and fed "
        f"this text's embeddings ({min(num_tokens, DEMO_MAX_TOKENS)} tokens)."
    )
    show_figure("enc_growth_chart", (), lambda: figures.norm_growth_chart(
        growth["pre"].norms.cpu(), growth["post"].norms.cpu(), width ** 0.5, growth["pre"].final_norms.cpu(),
        "mean ‖h‖ on the main path, untrained stacks"))
    pre_means, post_means = growth["pre"].norms.mean(dim=1).cpu(), growth["post"].norms.mean(dim=1).cpu()
    st.markdown(
        f"Measured: pre-LN grows from {pre_means[0]:.2f} to {pre_means[-1]:.2f} "
        f"(×{pre_means[-1] / pre_means[0]:.2f}) over {stack_analysis.DEMO_LAYERS} blocks; post-LN sits at "
        f"{post_means[1:].min():.2f}–{post_means[1:].max():.2f} after every block. This is why a pre-LN stack "
        "ends with one LayerNorm of its own (the diamond), which brings the sum back to the √D scale."
    )
    growth_frame = pd.DataFrame({"pre-LN mean ‖h‖": pre_means.numpy(), "post-LN mean ‖h‖": post_means.numpy()},
                                index=["input"] + [f"after block {index}" for index in range(len(pre_means) - 1)])
    st.dataframe(growth_frame.T.round(3))
    widgets.download_csv(growth_frame, "norm_growth.csv", key="enc_download_growth")
    widgets.show_source(stack_analysis.main_path_norms, EncoderLayer.residual, stack_analysis.untrained_layers,
                        stack_analysis.main_path_growth)


def feed_forward_section() -> None:
    st.markdown(
        f"The feed-forward network widens every token's vector from {config.width} to {config.ff_width} "
        "numbers, applies GELU, and projects back. GELU lets positive inputs through almost unchanged and "
        "squashes negative ones towards 0 (never below −0.17), so an activation above 0 means the neuron fired."
    )
    st.latex(r"\mathrm{FFN}(x) = \mathrm{GELU}(xW_1 + b_1)\,W_2 + b_2,\qquad \mathrm{GELU}(z) = z\,\Phi(z)")
    layer_column, count_column = st.columns(2)
    with layer_column:
        layer = choose_layer()
    with count_column:
        count = widgets.shared_slider("Neurons shown", "enc_neurons", 8, 128, 32,
                                      "The neurons with the highest mean activation over this text's tokens.")
    activation = trace.layers[layer].feed_forward.hidden_activation[0]     # (T, F)
    neurons = stack_analysis.most_active_neurons(activation, count)
    start, end = choose_window(WINDOW_TOKENS)
    shown = activation[start:end][:, neurons].cpu()
    fractions = stack_analysis.positive_fraction_by_layer(trace).cpu()
    st.metric(f"Activations above 0 in layer {layer}", f"{float(fractions[layer]):.1%}",
              help=f"Over all {num_tokens} tokens × {config.ff_width} neurons.")
    show_figure("enc_activation_chart", (layer, count, start), lambda: figures.activation_heatmap(
        shown, tokens[start:end], neurons.tolist(), first_token=start,
        title=f"Layer {layer}: the {len(neurons)} most active of {config.ff_width} neurons"))
    widgets.download_csv(
        lambda: widgets.matrix_frame(shown.numpy(), tokens[start:end], [f"n{i}" for i in neurons.tolist()]),
        f"feed_forward_layer{layer}.csv", key="enc_download_activations")
    show_figure("enc_fraction_chart", (layer,), lambda: figures.positive_fraction_chart(
        fractions, layer, "share of activations above 0, per layer"))
    widgets.show_source(stack_analysis.most_active_neurons, stack_analysis.positive_fraction,
                        stack_analysis.positive_fraction_by_layer)


def classifier_section() -> None:
    body = stack_analysis.encoder_body(pretrained.model)
    has_pooler = body.pooler is not None
    st.markdown(
        "A pretrained encoder is a *body*: it turns text into vectors. A task adds a *head*. To classify a whole "
        "text, BERT-style models read one vector: the last block's output at position 0, the [CLS] token, "
        "which attention lets gather from every other token. BERT first passes it through a *pooler*, a dense "
        "layer with tanh trained on next-sentence prediction; models without one (DistilBERT) read it as it "
        "is. A linear layer then maps it to one score (logit) per label, and softmax turns the scores into "
        "probabilities."
    )
    st.latex(r"s = \tanh(W_p\,h_{[\mathrm{CLS}]} + b_p),\qquad \mathrm{logits} = W s + b,\quad "
             r"W\in\mathbb{R}^{K\times D},\qquad p = \mathrm{softmax}(\mathrm{logits})")
    st.warning("This head is **untrained**: W and b are random (seed 0), so its probabilities say nothing about "
               "the text. Fine-tuning would train W and b (and usually the body) on labelled examples. What matters "
               "here are the shapes.", icon=":material/casino:")
    num_labels = widgets.shared_number_input("Number of labels K", "enc_labels", MIN_LABELS, MAX_LABELS,
                                             DEFAULT_LABELS)
    classifier = stack_analysis.untrained_classifier(config.width, num_labels)
    head = stack_analysis.apply_classifier_head(body, run.output.last_hidden_state, classifier)
    reads = "the pooler output s" if has_pooler else "h[CLS] itself (this checkpoint has no pooler)"
    st.markdown(
        f"The head reads {reads}. Shapes: h[CLS] ({config.width},) → s ({config.width},) → W ({num_labels}, "
        f"{config.width}) and b ({num_labels},) → logits ({num_labels},) → probabilities ({num_labels},), "
        f"summing to {float(head.probabilities.sum()):.3f}."
    )
    show_figure("enc_cls_chart", (), lambda: figures.cls_vector_chart(
        head.cls_vector.cpu(), head.summary.cpu() if has_pooler else None, "the vector the head reads"))
    show_figure("enc_logits_chart", (num_labels,), lambda: figures.classifier_output_chart(
        head.logits.cpu(), head.probabilities.cpu()))
    st.dataframe(pd.DataFrame({"label": range(num_labels), "logit": head.logits.cpu().numpy(),
                               "probability": head.probabilities.cpu().numpy()}), hide_index=True)
    st.caption("The pooler's weights come from the checkpoint, and dropout before the head is off outside "
               "training. The function below computes what `SequenceClassifier.forward` does after its body, "
               "without changing the model.")
    widgets.show_source(stack_analysis.apply_classifier_head, stack_analysis.untrained_classifier, SequenceClassifier)


def parameters_section() -> None:
    rows = stack_analysis.parameter_table(config, pretrained.model)
    total = stack_analysis.total_parameters(pretrained.model)
    st.markdown(
        "Every parameter count follows from a handful of shape numbers: the vocabulary V, the positions P, the "
        "width D, the feed-forward width F and the number of blocks L. Per block, four D × D projections with "
        "biases (Q, K, V and the output), the two feed-forward layers, and two LayerNorms of γ and β:"
    )
    st.latex(r"\underbrace{4(D^2 + D)}_{\text{attention}} + \underbrace{2DF + F + D}_{\text{feed-forward}}"
             r" + \underbrace{4D}_{\text{layer norms}}")
    frame = pd.DataFrame(map(asdict, rows)).set_index("component")
    frame.columns = ["from the configuration", "in the loaded model"]
    frame.loc["total"] = frame.sum()
    frame["share of the loaded model"] = (frame["in the loaded model"] / total).map("{:.1%}".format)
    st.dataframe(frame.reset_index(), hide_index=True)
    st.markdown(f"Σ p.numel() over the loaded model's parameters: **{total:,}** "
                f"({stack_analysis.in_millions(total)}).")
    mismatched = [row.component for row in rows if row.from_config != row.in_model]
    if mismatched:
        st.caption(f"Rows that differ ({', '.join(mismatched)}): the configuration cannot know these parts, "
                   "which depend on the checkpoint (a fine-tuned classifier's head, for example).")
    st.subheader("The model zoo, computed from configurations")
    zoo = stack_analysis.model_zoo()
    zoo_frame = pd.DataFrame(map(asdict, zoo)).rename(columns={
        "name": "model", "num_layers": "layers", "width": "width D", "num_heads": "heads", "ff_width": "FF width"})
    zoo_frame["≈"] = zoo_frame["parameters"].map(stack_analysis.in_millions)
    st.dataframe(zoo_frame, hide_index=True)
    st.caption("BERT-large computes to 335M, while it is often quoted as 340M; the same formula gives 109.5M for "
               "BERT-base (quoted as 110M). GPT-2's counts include no separate output layer: its LM head reuses "
               "the token embedding table.")
    widgets.show_source(parameter_breakdown, stack_analysis.count_parameters_by_component)


SECTIONS = {"Attention, all layers": attention_section, "Hidden states": hidden_states_section,
            "A word in context": word_section, "Pre-LN vs post-LN": layer_norm_section,
            "Feed-forward": feed_forward_section, "Classification head": classifier_section,
            "Parameters": parameters_section}

widgets.show_open_tab(SECTIONS, "enc_tab")
