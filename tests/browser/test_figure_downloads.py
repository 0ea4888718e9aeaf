"""A lecturer takes a figure for a slide: the chart's toolbar downloads it as a PNG 1,920 pixels wide and as an
SVG, both named after what the figure shows, made in the browser by plotly.js."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ElementTree

from lessons.common.ui import charts

EXPECTED_NAME = "multihead-layer-0-every-head-time-flies-like-an-arrow"


def download(app, button_title: str):
    plot = app.page.locator(".js-plotly-plot").first
    plot.scroll_into_view_if_needed()
    plot.hover()  # the toolbar shows while the pointer is over the chart
    button = plot.locator(f'.modebar-btn[data-title="{button_title}"]')
    button.wait_for()
    with app.page.expect_download() as started:
        button.click()
    return started.value


def test_the_camera_button_downloads_a_png_1920_pixels_wide_named_after_the_figure(app, tmp_path):
    app.open("multihead", min_plots=1)
    png = download(app, "Download plot as a PNG")
    assert png.suggested_filename == f"{EXPECTED_NAME}.png"
    path = tmp_path / png.suggested_filename
    png.save_as(path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk: width, then height
    assert width == 1920 and height >= 600, (width, height)


def test_the_svg_button_downloads_an_svg_of_the_chart_as_drawn(app, tmp_path):
    app.open("multihead", min_plots=1)
    svg = download(app, charts.SVG_BUTTON_TITLE)
    assert svg.suggested_filename == f"{EXPECTED_NAME}.svg"
    path = tmp_path / svg.suggested_filename
    svg.save_as(path)
    root = ElementTree.parse(path).getroot()
    assert root.tag.endswith("svg")
    shown_width = app.page.locator(".js-plotly-plot").first.bounding_box()["width"]
    assert abs(float(root.attrib["width"]) - shown_width) <= 2
    assert path.stat().st_size > 20_000  # every head's map, its labels and its colour bar
    texts = "".join(root.itertext())
    assert "arrow" in texts and "head 0" in texts
