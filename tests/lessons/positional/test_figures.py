"""The positional lesson's figures, as pure functions: what goes in is what is drawn, at its true index."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest
import torch

from anatomy.positional import sinusoidal_positional_encoding
from lessons.common.plots import safe_label
from lessons.positional.analysis import offset_profile, similarity_matrix
from lessons.positional.figures import (
    MAX_HEATMAP_CELLS,
    MAX_HEATMAP_ROWS,
    MAX_SIMILARITY_SIDE,
    colour_limit,
    dimension_curves,
    encoding_heatmap,
    evenly_spaced,
    similarity_by_offset,
    similarity_heatmap,
    similarity_to_position,
)

LONG_NAME = "paraphrase-multilingual-MiniLM-L12-v2 (embedded)"  # a model from the hub with a long name


def subtitle_lines(figure) -> list[str]:
    """The lines of a figure's subtitle as a learner reads them (markup left out)."""
    return [re.sub(r"<[^>]+>", "", line) for line in (figure.layout.title.subtitle.text or "").split("<br>")]


def plain_subtitle(figure) -> str:
    return " ".join(subtitle_lines(figure))


def test_evenly_spaced_keeps_everything_that_fits():
    assert evenly_spaced(64, 128).tolist() == list(range(64))
    assert evenly_spaced(0, 10).tolist() == []


def test_evenly_spaced_takes_every_kth_index_from_the_first():
    picks = evenly_spaced(512, 128)
    assert picks.tolist() == list(range(0, 512, 4))


def test_an_odd_step_alternates_even_and_odd_indices():
    plain, mixed = evenly_spaced(1024, 400), evenly_spaced(1024, 400, keep_parity=True)
    assert plain[:4].tolist() == [0, 3, 6, 9]  # step 3 is already odd
    assert evenly_spaced(1024, 512, keep_parity=True)[:4].tolist() == [0, 3, 6, 9]  # step 2 -> 3
    assert set(evenly_spaced(1024, 512) % 2) == {0}  # step 2 alone would draw only the sines
    assert set(mixed % 2) == {0, 1}


def test_a_small_table_is_drawn_whole_with_its_exact_values():
    table = sinusoidal_positional_encoding(64, 384)
    trace = encoding_heatmap(table, "Sinusoidal").data[0]
    np.testing.assert_array_equal(trace.z, table.numpy())
    assert trace.z.dtype == np.float32  # compact binary in the page
    assert list(trace.x) == list(range(384)) and list(trace.y) == list(range(64))
    assert "drawn" not in plain_subtitle(encoding_heatmap(table, "Sinusoidal"))
    assert trace.zmin == -trace.zmax == pytest.approx(-1.0, abs=1e-3)  # symmetric: white means 0


def test_a_large_table_is_thinned_to_true_rows_and_columns():
    table = sinusoidal_positional_encoding(512, 1024)
    figure = encoding_heatmap(table, "big")
    trace = figure.data[0]
    rows, columns = np.asarray(trace.y), np.asarray(trace.x)
    assert len(rows) == MAX_HEATMAP_ROWS and rows.tolist() == list(range(0, 512, 4))
    assert columns.tolist() == list(range(0, 1024, 3))  # 384 columns fit; the odd step keeps sin and cos
    assert trace.z.size <= MAX_HEATMAP_CELLS
    np.testing.assert_array_equal(trace.z, table.numpy()[np.ix_(rows, columns)])
    assert "drawn: one position in 4, one dimension in 3" in plain_subtitle(figure)


def test_colours_saturate_at_the_99th_percentile_so_one_outlier_cannot_wash_out_the_rest():
    table = np.full((10, 100), 0.05)
    table[0, 0] = 2.0  # one cell in a thousand
    assert colour_limit(table) == pytest.approx(0.05)
    trace = encoding_heatmap(table).data[0]
    assert (trace.zmin, trace.zmax) == (-0.05, 0.05)
    assert trace.z.max() == 2.0  # the value itself is still drawn (and hovered)


def test_curves_draw_the_chosen_columns_against_position():
    table = sinusoidal_positional_encoding(40, 16)
    figure = dimension_curves(table, [0, 1, 9], "curves")
    assert [trace.name for trace in figure.data] == ["i = 0 (sin)", "i = 1 (cos)", "i = 9 (cos)"]
    for trace, column in zip(figure.data, (0, 1, 9)):
        np.testing.assert_array_equal(trace.y, table[:, column].numpy())
        assert list(trace.x) == list(range(40))
    assert figure.layout.shapes == ()  # no text, nothing shaded


def test_curves_shade_the_positions_the_text_uses_and_no_more():
    table = sinusoidal_positional_encoding(20, 8)
    assert dimension_curves(table, [0], positions_in_text=5).layout.shapes[0].x1 == 4.5
    assert dimension_curves(table, [0], positions_in_text=300).layout.shapes[0].x1 == 19.5


def test_similarity_to_position_draws_one_line_per_table_and_marks_p():
    table = sinusoidal_positional_encoding(30, 8)
    similarities = similarity_matrix(table)
    figure = similarity_to_position({"sinusoidal": similarities[7], "<b>x</b>": similarities[3]}, 7, "cosine")
    assert [trace.name for trace in figure.data] == ["sinusoidal", "&lt;b&gt;x&lt;/b&gt;"]
    np.testing.assert_allclose(figure.data[0].y, similarities[7].numpy(), rtol=1e-6)
    assert figure.data[0].y[7] == pytest.approx(1.0)  # a position is most like itself
    assert figure.layout.shapes[0].x0 == 7


def test_similarity_heatmap_shows_the_matrix_and_thins_long_ones():
    small = similarity_matrix(sinusoidal_positional_encoding(50, 32))
    np.testing.assert_allclose(similarity_heatmap(small, "cosine").data[0].z, small.numpy(), rtol=1e-6)
    large = similarity_matrix(sinusoidal_positional_encoding(512, 32))
    trace = similarity_heatmap(large, "cosine").data[0]
    picks = np.asarray(trace.x)
    assert len(picks) == MAX_SIMILARITY_SIDE and picks.tolist() == list(range(0, 512, 4))
    np.testing.assert_allclose(trace.z, large.numpy()[np.ix_(picks, picks)], rtol=1e-6)
    assert "drawn: one position in 4" in plain_subtitle(similarity_heatmap(large, "cosine", "Sinusoidal"))


def test_dot_products_are_not_forced_around_zero():
    dots = similarity_matrix(sinusoidal_positional_encoding(20, 8), "dot")
    trace = similarity_heatmap(dots, "dot product", centre_on_zero=False).data[0]
    assert trace.zmin is None and trace.zmax is None


def test_offset_figure_draws_band_and_mean_per_table():
    profile = offset_profile(similarity_matrix(torch.randn(25, 6, generator=torch.Generator().manual_seed(0))))
    figure = similarity_by_offset({"learned": (profile.mean, profile.lowest, profile.highest)}, "cosine")
    highest, lowest, mean = figure.data
    np.testing.assert_allclose(highest.y, profile.highest.numpy(), rtol=1e-6)
    np.testing.assert_allclose(lowest.y, profile.lowest.numpy(), rtol=1e-6)
    np.testing.assert_allclose(mean.y, profile.mean.numpy(), rtol=1e-6)
    assert lowest.fill == "tonexty" and list(mean.x) == list(range(25))


@pytest.mark.parametrize("chart", ["table", "similarity"])
def test_a_chart_drawn_beside_another_names_its_table_in_the_title_and_the_rest_in_lines_that_fit_below(chart):
    table = sinusoidal_positional_encoding(512, 1024)  # thinned both ways: a note says so
    details = f"by {LONG_NAME}<br>512 positions × 1024 dimensions"
    if chart == "table":
        figure = encoding_heatmap(table, "Learned", details)
    else:
        figure = similarity_heatmap(similarity_matrix(table[:, :64]), "cosine", "Learned", details)
    # One line of title: plotly lifted a title of several lines out of the chart (its margin is pushed for it).
    assert figure.layout.title.text == "Learned"
    lines = subtitle_lines(figure)
    assert max(len(line) for line in lines) <= 44  # about 200 px of subtitle: one of two charts at 150 %
    assert "512 positions × 1024 dimensions" in lines  # a detail that fits stays on one line
    words = "".join(lines).replace(" ", "")  # nothing is lost
    assert words.startswith("byparaphrase-multilingual-MiniLM-L12-v2(embedded)512positions×1024dimensions")
    assert words.endswith("drawn:onepositionin4" + (",onedimensionin3" if chart == "table" else ""))


def test_a_long_line_is_broken_between_words_and_never_inside_an_escaped_character():
    from lessons.positional.figures import fitted_lines

    assert fitted_lines("by someone<br>64 positions × 384 dimensions") == "by someone<br>64 positions × 384 dimensions"
    name = safe_label("<b>" * 16)  # a typed name of 48 characters, drawn as typed
    lines = fitted_lines(f"by {name}").split("<br>")
    assert "".join(html.unescape(line) for line in lines) == "by " + "<b>" * 16
    assert all(len(html.unescape(line)) <= 44 for line in lines) and len(lines) == 2
    assert all(not re.search(r"[<>]|&(?!lt;|gt;|amp;)", line) for line in lines)  # each &lt; whole, on one line
