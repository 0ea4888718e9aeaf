"""The app follows the system's light or dark setting, and its figures stay readable in both: the text of a
chart against the background it is drawn on keeps WCAG's contrast of 4.5:1 for body text."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

COLOURS = """() => {
  const css = (colour) => {  // any CSS colour ("white", "#444", "rgba(...)") as the browser's rgb()/rgba()
    const probe = document.createElement('span');
    probe.style.color = colour;
    document.body.appendChild(probe);
    const computed = getComputedStyle(probe).color;
    probe.remove();
    return computed;
  };
  const plot = document.querySelector('.js-plotly-plot');
  const app = getComputedStyle(document.querySelector('[data-testid="stApp"]')).backgroundColor;
  const drawn = (selector) => {  // the fill each text is drawn with, stylesheets included
    const text = plot.querySelector(selector);
    return text ? getComputedStyle(text).fill : null;
  };
  return {app, paper: css(plot._fullLayout.paper_bgcolor), tick: drawn('.xtick text, .ytick text'),
          title: drawn('.g-xtitle text, .g-ytitle text, .gtitle')};
}"""


def rgba(colour: str) -> tuple[float, float, float, float]:
    parts = [float(part) for part in re.findall(r"[\d.]+", colour)]
    return (parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else 1.0)


def luminance(colour) -> float:
    def channel(value: float) -> float:
        value /= 255
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    red, green, blue = (channel(value) for value in colour[:3])
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def contrast(text: str, background: str, behind: str) -> float:
    paper = rgba(background)
    if paper[3] == 0:  # a transparent chart is drawn on the page's own background
        paper = rgba(behind)
    lighter, darker = sorted((luminance(rgba(text)), luminance(paper)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_the_theme_follows_the_system_because_both_variants_are_defined():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert "base" not in config["theme"]  # a fixed base would hide the System / Light / Dark choice
    assert {"light", "dark"} <= set(config["theme"])


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("lesson", ["multihead", "attention", "positional"])
def test_chart_text_stays_readable_in_light_and_dark(app, scheme, lesson):
    app.page.emulate_media(color_scheme=scheme)
    app.open(lesson, min_plots=1)
    colours = app.page.evaluate(COLOURS)
    page_is_dark = luminance(rgba(colours["app"])) < 0.2
    assert page_is_dark == (scheme == "dark"), colours
    assert colours["tick"] is not None, colours
    for text in ("tick", "title"):
        if colours[text] is not None:
            assert contrast(colours[text], colours["paper"], colours["app"]) >= 4.5, colours
