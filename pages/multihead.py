"""Multi-head comparison: every head of a layer side by side, a head view, two sentences compared,
statistics of every head in the stack, the split → concatenate → W_O path, and switching a head off."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from anatomy import ablation, head_stats
from anatomy.ablation import Ablation
from anatomy.head_stats import HeadStatistics
from anatomy.ui import loaders, sidebar, state, widgets
from anatomy.viz import multihead as viz

SENTENCE_A, SENTENCE_B = "time flies like an arrow", "fruit flies like a banana"
DEFAULT_LAYER, DEFAULT_HEAD, DEFAULT_WORD = 0, 2, "flies"
MAX_SENTENCE_CHARS = 300
HEAD_VIEW_WINDOW = 48   # tokens drawn in the head view of a long text
HEAD_VIEW_LINES = 300   # lines per head at most


def keep_or_restore(key: str, default, parse=str, valid=lambda _: True):
    """state.restore, after dropping a session value that no longer fits (another text or model)."""
    if key in st.session_state and not valid(st.session_state[key]):
        del st.session_state[key]
    return state.restore(key, default, parse=parse, valid=valid)


def parse_heads(raw: str) -> list[int]:
    return [int(part) for part in raw.split(",") if part.strip()]


def heads_check(num_heads: int):
    """Valid head lists name each existing head at most once."""
    return lambda heads: len(set(heads)) == len(heads) and all(0 <= head < num_heads for head in heads)


def chart(figure) -> None:
    st.plotly_chart(figure, width="stretch", config={"displaylogo": False})


@st.cache_resource(max_entries=4, show_spinner=False)
def statistics_of(reference: str, text: str) -> HeadStatistics:
    """Statistics of every head for one text (cached, and computed one layer at a time: a 512-token stack
    holds 19 million weights, 75 MB, and each statistic would need as much again in passing)."""
    run = loaders.get_encoder_run(reference, text)
    tokenizer = loaders.get_model(reference).tokenizer
    tokens = run.tokenized.tokens
    cls_keys = head_stats.token_marks(tokens, tokenizer.cls_token)
    sep_keys = head_stats.token_marks(tokens, tokenizer.sep_token)
    return run.over_layers(lambda weights: head_stats.head_statistics(weights, cls_keys, sep_keys))


# Four entries: each holds the text's states twice, about 11 MB at 512 tokens (see anatomy/ui/memory.py).
@st.cache_resource(max_entries=4, show_spinner="Running the model again without those heads…")
def ablation_of(reference: str, text: str, layer: int, heads_off: tuple[int, ...]) -> Ablation:
    run = loaders.get_encoder_run(reference, text)
    return ablation.ablate_heads(loaders.get_model(reference).model, run.output.trace, layer, heads_off)


# ── the tabs ─────────────────────────────────────────────────────────────────────────────────────────


@st.cache_resource(max_entries=16, show_spinner=False)  # 0.2 MB an entry at 512 tokens
def pooled_layer(reference: str, text: str, layer: int) -> head_stats.PooledMap:
    """Every head of one layer, average-pooled for the grid (the weights behind it are not kept: the trace
    recomputes them, 12.6 MB for a 512-token text, so a rerun that only redraws should not ask again)."""
    return head_stats.average_pool(layer_weights(loaders.get_encoder_run(reference, text), layer))


def all_heads_tab(context, run, layer: int, head: int) -> None:
    st.markdown(
        "Each panel is one head's attention matrix: row *i* is how query token *i* shares its attention "
        "over the keys. All panels use **one colour scale**, so equal shades mean equal weights: a head "
        "that is dark in one cell and pale elsewhere is focused; a head with an even wash is spreading out."
    )
    pooled = pooled_layer(context.reference, context.text, layer)           # (H, T', S')
    labels = viz.bin_labels(pooled.row_bins) if pooled.pooled else viz.token_labels(run.tokenized.tokens)
    if pooled.pooled:
        st.caption(
            f"The text has {len(run.tokenized)} tokens, so each panel is shrunk by average pooling to "
            f"{len(pooled.row_bins)} × {len(pooled.column_bins)}: a cell is the mean weight over a block of "
            f"tokens. Turn on the full-resolution view below to see one head exactly."
        )
    titles = [f"head {index}" for index in range(pooled.values.size(0))]
    chart(viz.head_grid(pooled.values, labels, titles, title=f"Layer {layer}: every head"))

    keep_or_restore("mh_full", False, parse=state.parse_bool)
    st.toggle(f"Show head {head} alone at full resolution", key="mh_full")
    state.publish(mh_full=st.session_state["mh_full"])
    if st.session_state["mh_full"]:
        full_map = layer_weights(run, layer)[head]                         # (T, T)
        chart(viz.head_grid(full_map[None], viz.token_labels(run.tokenized.tokens), [f"head {head}"],
                            columns=1, title=f"Layer {layer}, head {head}, every token",
                            panel_height=min(900, max(420, 14 * len(run.tokenized)))))
    names = labels if pooled.pooled else run.tokenized.tokens
    frame = widgets.matrix_frame(viz.compact(pooled.values[head]), names, names)
    widgets.download_csv(frame, f"layer{layer}_head{head}_attention.csv",
                         label=f"Download head {head}'s map (CSV)", key="mh_download_map")


def head_view_tab(run, layer: int, num_heads: int) -> None:
    st.markdown(
        "The same weights as lines: each token on the left is a **query**, each token on the right a **key**. "
        "A line's darkness and thickness is the weight the query gives that key. Pick several heads to see "
        "how differently they connect the same words (one colour per head)."
    )
    keep_or_restore("mh_heads", sorted({DEFAULT_HEAD % num_heads, 3 % num_heads}), parse=parse_heads,
                    valid=heads_check(num_heads))
    keep_or_restore("mh_threshold", 0.1, parse=float, valid=lambda value: 0.0 <= value <= 0.9)
    left, right = st.columns([2, 1])
    left.multiselect("Heads to draw", list(range(num_heads)), format_func=lambda head: f"head {head}", key="mh_heads")
    right.slider("Draw weights above", 0.0, 0.9, step=0.01, key="mh_threshold",
                 help="Lines below this weight are left out, so the strong links stand out.")
    heads, threshold = sorted(st.session_state["mh_heads"]), st.session_state["mh_threshold"]
    state.publish(mh_heads=",".join(map(str, heads)), mh_threshold=threshold)
    tokens = run.tokenized.tokens
    window = range(len(tokens))
    if len(tokens) > HEAD_VIEW_WINDOW:
        token = token_choice(tokens, "Centre the window on token")
        window = head_stats.focus_window(len(tokens), token, HEAD_VIEW_WINDOW)
        st.caption(
            f"The text has {len(tokens)} tokens; the view shows tokens {window.start}–{window.stop - 1} and "
            f"the links among them (at most {HEAD_VIEW_LINES} per head)."
        )
    if not heads:
        st.info("Choose at least one head to draw.", icon=":material/touch_app:")
        return
    weights = layer_weights(run, layer)[heads][:, window.start:window.stop, window.start:window.stop]
    chart(viz.head_view(weights, tokens[window.start:window.stop], heads, threshold, HEAD_VIEW_LINES,
                        first_position=window.start, title=f"Layer {layer}: who looks at whom"))


def two_sentences_tab(context, layer: int, head: int) -> None:
    st.markdown(
        "The same head reads every sentence with the same weights $W_Q$, $W_K$, $W_V$, yet where a word looks "
        "depends on its neighbours. In *time flies like an arrow*, “flies” is a verb; in *fruit flies like "
        "a banana* it is a noun. Both sentences run through the model; the chosen layer and head are shown "
        "for each."
    )
    keep_or_restore("mh_sentence_a", SENTENCE_A)
    keep_or_restore("mh_sentence_b", SENTENCE_B)
    left, right = st.columns(2)
    left.text_input("Sentence A", key="mh_sentence_a", max_chars=MAX_SENTENCE_CHARS)
    right.text_input("Sentence B", key="mh_sentence_b", max_chars=MAX_SENTENCE_CHARS)
    sentences = st.session_state["mh_sentence_a"], st.session_state["mh_sentence_b"]
    state.publish(mh_sentence_a=sentences[0], mh_sentence_b=sentences[1])
    if not all(sentence.strip() for sentence in sentences):
        st.info("Type a sentence in both boxes to compare them.", icon=":material/edit:")
        return
    runs = [loaders.get_encoder_run(context.reference, sentence) for sentence in sentences]
    for run in runs:
        widgets.truncation_notice(run.tokenized)
    pooled = [head_stats.average_pool(layer_weights(run, layer)[head]) for run in runs]
    labels = [viz.bin_labels(maps.row_bins) if maps.pooled else viz.token_labels(run.tokenized.tokens)
              for maps, run in zip(pooled, runs)]
    chart(viz.map_panels([maps.values for maps in pooled], labels, ["sentence A", "sentence B"], columns=2,
                         zmax=1.0, title=f"Layer {layer}, head {head}, in both sentences", panel_height=380))

    shared = shared_words(*(run.tokenized for run in runs))
    if not shared:
        st.info("The two sentences share no word, so there is no word to follow from one to the other.",
                icon=":material/compare_arrows:")
        return
    keep_or_restore("mh_word", DEFAULT_WORD if DEFAULT_WORD in shared else shared[0], valid=lambda word: word in shared)
    st.selectbox("Follow the word", shared, key="mh_word", help="Words (tokens) found in both sentences.")
    word = st.session_state["mh_word"]
    state.publish(mh_word=word)
    positions = [run.tokenized.tokens.index(word) for run in runs]
    rows = [layer_weights(run, layer)[head, position] for run, position in zip(runs, positions)]
    chart(viz.focus_rows(rows, [run.tokenized.tokens for run in runs], ["sentence A", "sentence B"],
                         title=f"Where the shared word looks (layer {layer}, head {head})"))
    if len(runs[0].tokenized) == len(runs[1].tokenized):  # rows over the same positions can be compared
        differences = ablation.attention_shift(*(layer_weights(run, layer)[:, position:position + 1]
                                                 for run, position in zip(runs, positions)))  # (H,)
        most = int(differences.argmax())
        st.caption(f"In layer {layer}, the word's attention differs most between the sentences in head {most} "
                   f"(½ Σ|p − q| = {float(differences[most]):.2f}, from 0 = same to 1 = disjoint).")
    similarity = ablation.cosine_similarity(*(
        ablation.states_by_depth(run.output.trace)[:, position] for run, position in zip(runs, positions)))
    st.markdown(
        "How alike is the word's vector in the two sentences at each depth? Cosine similarity 1 means the "
        "same direction. "
        + ("It sits at the same position in both, so its embedding is identical and the similarity starts at 1; "
           "every layer then mixes in its different neighbours." if positions[0] == positions[1] else
           "It sits at different positions, so even the embeddings differ by their position vectors.")
    )
    chart(viz.similarity_by_layer(similarity, title="The shared word in sentence A vs sentence B"))


def statistics_tab(context, run) -> None:
    st.markdown(
        "A few numbers per head describe how it looks, averaged over the query tokens of the text. "
        "Click a column header to sort the table; the map shows one statistic for the whole stack."
    )
    st.latex(
        r"H_i = -\sum_j a_{ij}\log a_{ij} \qquad d_i = \sum_j a_{ij}\,|i-j| \qquad "
        r"\text{share}_i(K) = \sum_{j\in K} a_{ij}"
    )
    st.caption(
        "Entropy is 0 for a head that puts everything on one key and log T for one that spreads evenly over "
        "T keys. Shares on [CLS] and [SEP] are often large: BERT-style heads with nothing to do park their "
        "attention there. The previous-token share is averaged over tokens 1 … T−1 (token 0 has no previous)."
    )
    statistics = statistics_of(context.reference, context.text)
    table = pd.DataFrame(statistics.rows())
    st.dataframe(
        table, hide_index=True, height=320,
        column_config={name: st.column_config.NumberColumn(name, format="%.3f", help=help_text)
                       for name, help_text in head_stats.STATISTICS.items()},
    )
    widgets.download_csv(table.set_index(["layer", "head"]), "head_statistics.csv", key="mh_download_statistics")
    names = list(head_stats.STATISTICS)
    keep_or_restore("mh_stat", "previous_share", valid=lambda name: name in names)
    st.selectbox("Statistic on the map", names, key="mh_stat",
                 format_func=lambda name: head_stats.STATISTICS[name])
    name = st.session_state["mh_stat"]
    state.publish(mh_stat=name)
    low, high = head_stats.statistic_range(name, len(run.tokenized))
    chart(viz.layer_head_map(getattr(statistics, name), name, zmin=low, zmax=high,
                             title=f"{head_stats.STATISTICS[name]}, every layer and head"))


def recombination_tab(context, run, layer: int) -> None:
    st.markdown(
        "Multi-head attention splits each token's $D$ numbers into $H$ heads of $d_{head}$ numbers, lets each "
        "head attend on its own, then lays the $H$ outputs side by side again and mixes them with $W_O$. "
        "Here is that path on the real numbers of one token."
    )
    st.latex(r"\text{concat} = [\,o_1\;o_2\;\cdots\;o_H\,],\qquad "
             r"\text{output} = \text{concat}\,W_O^\top + b = \sum_{h} o_h\,W_{O,h}^\top + b")
    tokens = run.tokenized.tokens
    token = token_choice(tokens, "Token")
    attention = context.pretrained.model.layers[layer].attention
    traced = run.output.trace.layers[layer].attention
    result = ablation.recombine_heads(attention, traced, token)
    heads, head_width = result.head_outputs.shape
    widgets.show_aligned_lines([
        f"trace.layers[{layer}].attention.head_outputs  {tuple(traced.head_outputs.shape)}   (B, H, T, d_head)",
        f"  one token, every head                 {tuple(result.head_outputs.shape)}",
        f"concatenated                            {tuple(result.concatenated.shape)}"
        f"   H × d_head = {heads} × {head_width}",
        f"W_O, b_O                                {tuple(attention.output.weight.shape)}, {tuple(result.bias.shape)}",
        f"output = concat · W_Oᵀ + b              {tuple(result.output.shape)}",
    ])
    checks = pd.DataFrame({
        "check": ["torch.cat(head outputs) vs traced concatenation",
                  "concat · W_Oᵀ + b vs traced attention output",
                  "Σ_h head contribution + b vs traced attention output"],
        "largest |difference|": [result.concatenation_gap, result.output_gap, result.sum_gap],
    })
    st.dataframe(checks, hide_index=True, column_config={
        "largest |difference|": st.column_config.NumberColumn(format="%.2e")})
    st.caption("The concatenation is a reshape, so it matches exactly; the products differ only by float rounding.")
    chart(viz.recombination(result.head_outputs, result.concatenated, title=f"Layer {layer}: one token's heads"))
    chart(viz.contribution_bars(result.contribution_norms, title="How much each head adds to this token through W_O"))
    widgets.download_csv(
        pd.DataFrame(result.contributions.cpu().numpy(), index=[f"head {h}" for h in range(heads)]),
        f"layer{layer}_token{token}_head_contributions.csv", label="Download each head's contribution (CSV)",
        key="mh_download_contributions",
    )


def switch_off_tab(context, run, layer: int, head: int, num_heads: int) -> None:
    st.markdown(
        "Switching a head off means zeroing its output before $W_O$, so it adds nothing to any token, and "
        "letting the rest of the network run as usual. The shared model is never changed: the layer is "
        "recomputed from the recorded head outputs and the later layers run on the new vectors."
    )
    keep_or_restore("mh_ablate", [head], parse=parse_heads, valid=heads_check(num_heads))
    st.multiselect(f"Heads of layer {layer} to switch off", list(range(num_heads)),
                   format_func=lambda index: f"head {index}", key="mh_ablate")
    heads_off = tuple(sorted(st.session_state["mh_ablate"]))
    state.publish(mh_ablate=",".join(map(str, heads_off)))
    result = ablation_of(context.reference, context.text, layer, heads_off)
    final = result.final_similarity
    first, second, third = st.columns(3)
    first.metric("[CLS] final vector, cosine with original", f"{float(final[0]):.4f}")
    second.metric("Least similar final token vector", f"{float(final.min()):.4f}")
    third.metric("Largest attention shift in a later head", f"{float(result.attention_shift.max()):.3f}")
    if not heads_off:
        st.caption("No head is switched off, so every vector is exactly as before.")
    chart(viz.token_similarity_map(result.token_similarity, run.tokenized.tokens,
                                   title="Each token's vector with vs without the heads (cosine)"))
    untouched = "The embeddings row is" if layer == 0 else f"The rows up to “after layer {layer - 1}” are"
    st.caption(f"{untouched} untouched: the change starts in layer {layer} and the residual stream carries it on.")
    chart(viz.layer_head_map(result.attention_shift, "attention shift", zmin=0.0,
                             zmax=max(0.05, float(result.attention_shift.max())),
                             title="How far each later head's attention moved (½ Σ|p − q| per row, averaged)"))
    similarity = pd.DataFrame(result.token_similarity.cpu().numpy().T, columns=[
        "embeddings", *[f"after layer {index}" for index in range(result.token_similarity.size(0) - 1)]])
    similarity.insert(0, "token", run.tokenized.tokens)
    widgets.download_csv(similarity, f"ablation_layer{layer}_heads{'-'.join(map(str, heads_off))}.csv",
                         key="mh_download_ablation")


# ── small helpers ────────────────────────────────────────────────────────────────────────────────────


def layer_weights(run, layer: int):
    """(H, T, T) one layer's weights, read from the trace (run.attention_weights would stack all L layers)."""
    return run.output.trace.layers[layer].attention.weights[0]


def token_choice(tokens, label: str) -> int:
    """The `mh_token` selector, shared by the head view and the recombination tab."""
    keep_or_restore("mh_token", 1 if len(tokens) > 2 else 0, parse=int, valid=lambda index: 0 <= index < len(tokens))
    st.selectbox(label, list(range(len(tokens))), format_func=lambda index: f"{index}: {tokens[index]}", key="mh_token")
    state.publish(mh_token=st.session_state["mh_token"])
    return st.session_state["mh_token"]


def shared_words(first, second) -> list[str]:
    """Ordinary tokens of the first text that also occur in the second, in the first text's order."""
    others = {token for token, special in zip(second.tokens, second.special) if not special}
    words = [token for token, special in zip(first.tokens, first.special) if not special and token in others]
    return list(dict.fromkeys(words))


# ── the page ─────────────────────────────────────────────────────────────────────────────────────────

context = sidebar.current()
st.title("Multi-head comparison")
st.markdown(
    "One attention head computes one weighted average per token. A multi-head layer runs $H$ of them side "
    "by side, each with its own $W_Q$, $W_K$ and $W_V$ of width $d_{head} = D / H$, so that one head can follow "
    "syntax while another tracks position. This page opens every head of a real model on your text."
)
if context.pretrained.family != "encoder" or context.pretrained.tokenizer is None:
    st.info("This lesson needs a BERT-style encoder with its tokenizer. Leave the model field empty to use "
            "the embedded all-MiniLM-L6-v2.", icon=":material/info:")
    st.stop()
if not context.has_text:
    st.info("Type some text in the sidebar (a sentence or two) to see how each head reads it.", icon=":material/edit:")
    st.stop()

run = loaders.get_encoder_run(context.reference, context.text)
widgets.truncation_notice(run.tokenized)
config = context.pretrained.config
num_layers, num_heads = config.num_layers, config.num_heads

left, right = st.columns(2)
keep_or_restore("mh_layer", DEFAULT_LAYER, parse=int, valid=lambda value: 0 <= value < num_layers)
keep_or_restore("mh_head", DEFAULT_HEAD % num_heads, parse=int, valid=lambda value: 0 <= value < num_heads)
left.selectbox("Layer", list(range(num_layers)), format_func=lambda value: f"layer {value}", key="mh_layer")
right.selectbox("Head to study closely", list(range(num_heads)), format_func=lambda value: f"head {value}",
                key="mh_head", help="Used for the full-resolution map, the two-sentence comparison and as "
                "the head switched off by default.")
layer, head = st.session_state["mh_layer"], st.session_state["mh_head"]
state.publish(mh_layer=layer, mh_head=head)

TABS = ["All heads", "Head view", "Two sentences", "Head statistics", "Split and recombine", "Switch a head off"]
keep_or_restore("mh_tab", TABS[0], valid=lambda name: name in TABS)
tabs = st.tabs(TABS, key="mh_tab", on_change="rerun")
state.publish(mh_tab=st.session_state["mh_tab"])
drawers = [
    lambda: all_heads_tab(context, run, layer, head),
    lambda: head_view_tab(run, layer, num_heads),
    lambda: two_sentences_tab(context, layer, head),
    lambda: statistics_tab(context, run),
    lambda: recombination_tab(context, run, layer),
    lambda: switch_off_tab(context, run, layer, head, num_heads),
]
for tab, draw in zip(tabs, drawers):
    with tab:
        if tab.open:  # only the open tab runs (st.tabs with on_change="rerun"), which keeps reruns light
            draw()

widgets.show_source(
    head_stats.head_statistics, head_stats.row_entropy, head_stats.attention_distance, head_stats.average_pool,
    ablation.recombine_heads, ablation.ablate_heads, ablation.layer_with_heads_scaled,
)
