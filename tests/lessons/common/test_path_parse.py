"""Figures built with the remembered parse of plotly's property paths (plots.parse_path_once) are the figures
plotly's own parse builds: the same JSON, property for property, on every view with a chart."""

from __future__ import annotations

import plotly.basedatatypes
import plotly.io as pio
import pytest
from plotly.subplots import make_subplots

from harness.apptest import open_page, plotly_figures
from harness.views import VIEWS
from lessons.common import plots

VIEWS_WITH_CHARTS = {name: view for name, view in VIEWS.items() if view.charts > 0}
PLOTLYS_OWN_PARSE = plotly.basedatatypes._parse_path_uncached


def panels_with_every_kind_of_path() -> str:
    """A figure set through dotted, underscored, indexed and per-panel paths, as the lessons' figures are."""
    figure = make_subplots(rows=1, cols=2, subplot_titles=("left", "right"))
    figure.add_heatmap(z=[[1, 2], [3, 4]], row=1, col=1, coloraxis="coloraxis")
    figure.add_scatter(y=[1, 3], error_y_array=[0.1, 0.2], marker_line_width=2, row=1, col=2)
    figure.update_layout(title_text="both", xaxis2_title_text="position", coloraxis_colorbar_title_side="right")
    figure.update_xaxes(tickangle=-45, showgrid=False, row=1, col=2)
    figure.update_yaxes(autorange="reversed", title_standoff=4, row=1, col=1)
    figure.layout["annotations[0].font.size"] = 11
    figure.update_traces(selector={"type": "heatmap"}, zmid=0)
    return pio.to_json(figure)


def test_plotly_builds_every_figure_with_the_remembered_parse():
    assert plotly.basedatatypes._str_to_dict_path_full is plots.parse_path_once


def test_the_remembered_parse_answers_what_plotlys_own_parse_answers():
    for path in ("xaxis2.title_text", "error_x.array[0]", "annotations[3].font.size", "marker_line_width", "z"):
        assert plots.parse_path_once(path) == PLOTLYS_OWN_PARSE(path)
        assert plots.parse_path_once(path) == PLOTLYS_OWN_PARSE(path)  # the second time from memory


def test_a_figure_set_through_paths_is_the_same_with_either_parse(monkeypatch):
    remembered = panels_with_every_kind_of_path()
    monkeypatch.setattr(plotly.basedatatypes, "_str_to_dict_path_full", PLOTLYS_OWN_PARSE)
    assert remembered == panels_with_every_kind_of_path()


@pytest.mark.slow
@pytest.mark.parametrize("name", VIEWS_WITH_CHARTS)
def test_every_view_shows_the_same_figures_with_either_parse(name, monkeypatch):
    view = VIEWS_WITH_CHARTS[name]
    remembered = plotly_figures(open_page(f"lesson_pages/{view.path}.py", query=view.query))
    monkeypatch.setattr(plotly.basedatatypes, "_str_to_dict_path_full", PLOTLYS_OWN_PARSE)
    parsed_anew = plotly_figures(open_page(f"lesson_pages/{view.path}.py", query=view.query))
    assert remembered
    assert remembered == parsed_anew
