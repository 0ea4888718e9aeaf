"""The multi-head figures as pure functions: right shapes, the input numbers, escaped labels."""

from __future__ import annotations

import numpy as np
import pytest

from lessons.common.cell_numbers import CELL_FONT_SIZE, DESKTOP_CHART, NUMBERS_FROM_PX
from lessons.common.labels import token_labels
from lessons.common.matrix_figures import axis_suffix
from lessons.multihead import figures as viz

HOSTILE_TOKEN = "<b>x</b>"


def attention(heads: int, tokens: int, seed: int = 0) -> np.ndarray:
    """(heads, tokens, tokens) random rows that each sum to 1."""
    scores = np.random.default_rng(seed).normal(size=(heads, tokens, tokens))
    weights = np.exp(scores)
    return weights / weights.sum(axis=-1, keepdims=True)


def test_token_labels_number_repeated_words():
    assert token_labels(["the", "cat", "the", HOSTILE_TOKEN]) == ["0: the", "1: cat", "2: the", "3: <b>x</b>"]


def test_head_grid_draws_one_panel_per_head_on_one_shared_colour_scale():
    maps = attention(12, 5)
    labels = token_labels(["[CLS]", "a", HOSTILE_TOKEN, "b", "[SEP]"])
    figure = viz.head_grid(maps, labels, [f"head {head}" for head in range(12)], title="layer 0")
    heatmaps = [trace for trace in figure.data if trace.type == "heatmap"]
    assert len(heatmaps) == 12
    for head, trace in enumerate(heatmaps):
        np.testing.assert_allclose(trace.z, maps[head], rtol=1e-6)  # float32 on the wire
        assert trace.coloraxis == "coloraxis"
    assert figure.layout.coloraxis.cmin == 0.0
    assert figure.layout.coloraxis.cmax == pytest.approx(maps.max(), rel=1e-6)
    assert heatmaps[0].x[2] == "2: &lt;b&gt;x&lt;/b&gt;" and "<b>" not in " ".join(heatmaps[0].x)
    assert [annotation.text for annotation in figure.layout.annotations][:2] == ["head 0", "head 1"]
    # 12 panels in 3 rows of 4: the fifth panel starts the second row, on its own axes.
    assert heatmaps[4].xaxis == "x5" and figure.layout.xaxis5.domain[0] == figure.layout.xaxis.domain[0]
    assert figure.layout.yaxis5.domain[1] < figure.layout.yaxis.domain[0]


def test_head_grid_uses_a_given_zmax_and_hides_ticks_of_long_inputs():
    maps = attention(2, 30)
    figure = viz.head_grid(maps, token_labels(["w"] * 30), ["a", "b"], zmax=1.0)
    assert figure.layout.coloraxis.cmax == 1.0
    assert figure.layout.xaxis.showticklabels is False  # 30 > 24 labels: names move to the hover


def test_map_panels_accepts_a_different_length_per_panel():
    first, second = attention(1, 4)[0], attention(1, 6, seed=1)[0]
    figure = viz.map_panels(
        [first, second],
        [token_labels(list("abcd")), token_labels(list("uvwxyz"))],
        ["A", "B"],
        columns=2,
        zmax=1.0,
    )
    assert [np.asarray(trace.z).shape for trace in figure.data] == [(4, 4), (6, 6)]
    np.testing.assert_allclose(figure.data[1].z, second, rtol=1e-6)
    assert figure.data[1].y[5] == "5: z"


def test_strongest_links_keep_weights_above_the_threshold_strongest_first_up_to_the_cap():
    weights = np.array([[0.7, 0.2, 0.1], [0.05, 0.9, 0.05], [0.3, 0.3, 0.4]])
    queries, keys, strengths = viz.strongest_links(weights, threshold=0.25, max_links=10)
    assert strengths.tolist() == [0.9, 0.7, 0.4, 0.3, 0.3]
    assert list(zip(queries.tolist(), keys.tolist()))[:3] == [(1, 1), (0, 0), (2, 2)]
    assert len(viz.strongest_links(weights, threshold=0.25, max_links=2)[0]) == 2


def test_head_view_draws_a_line_from_each_query_to_each_strong_key():
    weights = np.zeros((1, 3, 3))
    weights[0, 0, 0] = 1.0
    weights[0, 1, 0], weights[0, 1, 1] = 0.6, 0.4
    weights[0, 2, 1], weights[0, 2, 2] = 0.05, 0.95
    figure = viz.head_view(weights, ["[CLS]", HOSTILE_TOKEN, "[SEP]"], heads=[2], threshold=0.1)
    lines = [trace for trace in figure.data if trace.mode == "lines" and trace.x is not None and len(trace.x) > 1]
    segments = []
    for trace in lines:
        y = np.asarray(trace.y, dtype=float)
        segments += [(int(y[index]), int(y[index + 1]), trace.opacity) for index in range(0, len(y), 3)]
        assert np.asarray(trace.x, dtype=float)[:2].tolist() == [0.0, 1.0]  # left column -> right column
    assert sorted(segment[:2] for segment in segments) == [(0, 0), (1, 0), (1, 1), (2, 2)]  # 0.05 is left out
    opacity = {segment[:2]: segment[2] for segment in segments}
    assert opacity[(0, 0)] > opacity[(1, 1)]  # weight 1.0 is drawn darker than weight 0.4
    legend = [trace.name for trace in figure.data if trace.showlegend is not False and trace.name]
    assert legend == ["head 2"]
    token_texts = [trace.text for trace in figure.data if trace.mode == "markers+text"]
    assert len(token_texts) == 2 and token_texts[0][1] == "&lt;b&gt;x&lt;/b&gt;"


def test_head_view_caps_the_number_of_lines_per_head():
    weights = np.full((2, 40, 40), 1 / 40)
    figure = viz.head_view(weights, ["w"] * 40, heads=[0, 1], threshold=0.0, max_links=100)
    drawn = sum(
        len(trace.x) // 3 for trace in figure.data if trace.mode == "lines" and trace.x is not None and len(trace.x) > 1
    )
    assert drawn == 200  # 1600 weights per head above 0, 100 drawn for each of the two heads


def test_head_view_tells_36_heads_apart_by_colour_and_line_style():
    weights = np.full((36, 2, 2), 0.5)
    figure = viz.head_view(weights, ["a", "b"], heads=range(36), threshold=0.1)
    legend = [trace for trace in figure.data if trace.showlegend is not False and trace.name]
    looks = {trace.name: (trace.line.color, trace.line.dash) for trace in legend}
    assert len(looks) == 36 and len(set(looks.values())) == 36
    assert looks["head 0"][0] == looks["head 12"][0] == looks["head 24"][0]  # twelve colours come round again,
    assert [looks[f"head {head}"][1] for head in (0, 12, 24)] == ["solid", "dash", "dot"]  # each round its style
    for trace in figure.data:  # and a head's lines are drawn as its legend entry shows them
        if trace.mode == "lines" and trace.name:
            assert (trace.line.color, trace.line.dash) == looks[trace.name]


def test_focus_rows_show_each_sentences_row_as_bars():
    rows = [np.array([0.1, 0.6, 0.3]), np.array([0.2, 0.2, 0.5, 0.1])]
    figure = viz.focus_rows(rows, [["a", "flies", "b"], ["c", "d", "flies", HOSTILE_TOKEN]], ["A", "B"])
    assert [trace.type for trace in figure.data] == ["bar", "bar"]
    np.testing.assert_allclose(figure.data[1].y, rows[1], rtol=1e-6)
    assert figure.data[1].x[3] == "3: &lt;b&gt;x&lt;/b&gt;" and figure.data[1].xaxis == "x2"


def test_layer_head_map_has_layers_down_and_heads_across():
    values = np.arange(6.0).reshape(2, 3)
    figure = viz.layer_head_map(values, "entropy", zmin=0.0, zmax=5.0)
    np.testing.assert_array_equal(figure.data[0].z, values)
    assert list(figure.layout.yaxis.ticktext) == ["layer 0", "layer 1"]
    assert list(figure.layout.xaxis.ticktext) == ["head 0", "head 1", "head 2"]


def test_recombination_shows_the_head_blocks_and_their_concatenation():
    head_outputs = np.arange(12.0).reshape(3, 4) - 6
    figure = viz.recombination(head_outputs, head_outputs.reshape(-1))
    top, bottom = figure.data
    np.testing.assert_array_equal(top.z, head_outputs)
    np.testing.assert_array_equal(np.asarray(bottom.z)[0], head_outputs.reshape(-1))
    assert [shape.x0 for shape in figure.layout.shapes] == [3.5, 7.5]  # between heads 0|1 and 1|2
    assert figure.layout.coloraxis.cmin == -6.0 and figure.layout.coloraxis.cmax == 6.0


def test_recombination_frames_the_marked_heads_row_and_its_block_of_the_concatenation():
    head_outputs = np.arange(12.0).reshape(3, 4) - 6
    figure = viz.recombination(head_outputs, head_outputs.reshape(-1), marked_head=1)
    row, block = [shape for shape in figure.layout.shapes if shape.type == "rect"]
    assert (row.xref, row.yref, row.x0, row.x1, row.y0, row.y1) == ("x", "y", -0.5, 3.5, 0.5, 1.5)
    assert (block.xref, block.yref, block.x0, block.x1) == ("x2", "y2 domain", 3.5, 7.5)  # features 4 to 7


def test_map_panels_frame_only_the_marked_panel():
    maps = attention(3, 4)
    labels = token_labels(list("abcd"))
    assert not viz.head_grid(maps, labels, ["h0", "h1", "h2"]).layout.shapes
    (frame,) = viz.head_grid(maps, labels, ["h0", "h1", "h2"], marked=2).layout.shapes
    assert (frame.xref, frame.yref, frame.x0, frame.x1, frame.y0, frame.y1) == ("x3 domain", "y3 domain", 0, 1, 0, 1)


def test_contribution_bars_grey_out_switched_off_heads():
    figure = viz.contribution_bars(np.array([1.0, 2.0, 3.0]), heads_off=[1])
    np.testing.assert_array_equal(figure.data[0].y, [1.0, 2.0, 3.0])
    assert figure.data[0].marker.color[1] == "#bbbbbb" and figure.data[0].marker.color[0] != "#bbbbbb"


def test_contribution_bars_past_twelve_heads_are_hatched():
    figure = viz.contribution_bars(np.ones(16))
    assert figure.data[0].marker.color[12] == figure.data[0].marker.color[0]
    assert list(figure.data[0].marker.pattern.shape) == [""] * 12 + ["/"] * 4


def test_similarity_figures_label_each_depth():
    by_layer = viz.similarity_by_layer(np.array([1.0, 0.9, 0.8]))
    assert list(by_layer.data[0].x) == ["embeddings", "layer 0", "layer 1"]
    per_token = viz.token_similarity_map(np.ones((3, 2)), ["a", HOSTILE_TOKEN])
    assert list(per_token.layout.yaxis.ticktext) == ["embeddings", "after layer 0", "after layer 1"]
    assert list(per_token.layout.xaxis.ticktext) == ["a", "&lt;b&gt;x&lt;/b&gt;"]
    # Cosines near 1 get the whole colour range: the scale starts at the smallest value, or 0.99.
    assert per_token.data[0].zmin == 0.99 and per_token.data[0].zmax == 1.0
    assert viz.token_similarity_map(np.array([[1.0, 0.95]]), ["a", "b"]).data[0].zmin == 0.95


def shown_tick_labels(figure, axis: str) -> list[bool]:
    """Whether each panel's x or y axis shows its tick labels, panel by panel."""
    return [bool(figure.layout[f"{axis}axis{axis_suffix(panel)}"].showticklabels) for panel in range(12)]


def test_a_grid_of_heads_labels_rows_on_its_first_column_and_columns_under_its_lowest_row():
    tokens = "[CLS] the cat sat on the mat and the dog ate my homework [SEP]".split()
    figure = viz.head_grid(attention(12, 14), token_labels(tokens), [f"head {head}" for head in range(12)])
    # 14 labels fit across a panel of a desktop chart three abreast, not four: 4 rows of 3 panels.
    assert figure.layout.xaxis4.domain == figure.layout.xaxis.domain
    assert shown_tick_labels(figure, "y") == [panel % 3 == 0 for panel in range(12)]
    assert shown_tick_labels(figure, "x") == [panel >= 9 for panel in range(12)]
    plot_width = 700  # pixels of an 820 px desktop chart left for the maps, after the row labels
    panel_width = (figure.layout.xaxis.domain[1] - figure.layout.xaxis.domain[0]) * plot_width
    assert panel_width >= 14 * 12  # plotly drops labels closer than 12 px (10 px text)
    assert figure.layout.xaxis10.tickangle == -90  # upright labels need only their line height each


def test_the_columns_of_a_grid_follow_the_number_of_labels():
    assert [viz.panel_columns(count) for count in (7, 12, 13, 16, 17, 24, 25)] == [4, 4, 3, 3, 2, 2, 4]


def test_two_sentences_label_each_map_on_its_outer_side():
    first, second = attention(1, 7)[0], attention(1, 7, seed=1)[0]
    figure = viz.map_panels(
        [first, second],
        [token_labels("[CLS] time flies like an arrow [SEP]".split()), token_labels(list("abcdefg"))],
        ["sentence A", "sentence B"],
        columns=2,
        zmax=1.0,
    )
    assert figure.layout.yaxis.side == "left" and figure.layout.yaxis2.side == "right"
    assert figure.layout.yaxis.showticklabels and figure.layout.yaxis2.showticklabels
    assert figure.layout.xaxis.showticklabels and figure.layout.xaxis2.showticklabels
    colour_bar = figure.layout.coloraxis.colorbar
    assert colour_bar.orientation == "h"  # under the maps: beside them it would sit on sentence B's labels
    with pytest.raises(ValueError):
        viz.map_panels([first] * 3, [list("abcdefg"), list("hijklmn"), list("opqrstu")], ["a", "b", "c"])


def test_the_ablation_scale_starts_at_a_round_number_below_the_values_and_says_so():
    similarity = np.array([[1.0, 1.0, 1.0], [0.9990, 0.9777, 0.9951]])
    figure = viz.token_similarity_map(similarity, ["[CLS]", "like", "[SEP]"])
    trace = figure.data[0]
    assert (trace.zmin, trace.zmax) == (0.95, 1.0)
    # 0.978 sits in the middle of the scale, not at its dark end as on a 0.978–1 scale.
    assert 0.4 < (0.9777 - trace.zmin) / (trace.zmax - trace.zmin) < 0.6
    assert trace.colorbar.title.text == "cosine, 0.95 to 1"
    assert viz.similarity_floor(0.2) == 0.0 and viz.similarity_floor(-0.3) == -1.0


def test_numbers_are_written_in_cells_at_12_px_where_a_desktop_has_room_and_hidden_on_a_phone():
    statistics = viz.layer_head_map(np.full((6, 12), 0.5), "entropy")  # MiniLM: 6 layers of 12 heads
    assert statistics.data[0].texttemplate and statistics.data[0].textfont.size == CELL_FONT_SIZE
    assert 358 < statistics.layout.meta[NUMBERS_FROM_PX] <= DESKTOP_CHART  # a phone's chart is 358 px wide
    assert not viz.layer_head_map(np.full((24, 16), 0.5), "entropy").data[0].texttemplate  # rows too low
    assert not viz.layer_head_map(np.full((6, 32), 0.5), "entropy").data[0].texttemplate  # too many heads
    few = viz.token_similarity_map(np.ones((3, 7)), list("abcdefg"))
    assert few.data[0].texttemplate and few.data[0].textfont.size == CELL_FONT_SIZE
    assert 358 < few.layout.meta[NUMBERS_FROM_PX] <= DESKTOP_CHART
    assert not viz.token_similarity_map(np.ones((3, 20)), list("abcdefghijklmnopqrst")).data[0].texttemplate


def test_where_a_word_looks_labels_its_keys_upright():
    figure = viz.focus_rows([np.array([0.5, 0.5])] * 2, [["a", "b"], ["c", "d"]], ["A", "B"])
    assert figure.layout.xaxis.tickangle == -90 and figure.layout.xaxis2.tickangle == -90
