"""Every figure of the app is drawn here, ready for a slide: the camera button of its toolbar downloads a PNG
1,920 pixels wide, a second button an SVG, both named after what the figure shows.

The name is built from the lesson, the figure's title and the studied text ("multihead-all-heads-of-layer-1-
time-flies-like-an-arrow.png"): a folder of downloads tells a lecturer which is which. The PNG is plotly's own
export (its `toImageButtonOptions`), laid out 960 pixels wide and drawn at twice the resolution, so text stays
as large on the slide as on the screen. Plotly's toolbar holds one download button only; the SVG button is
added to every chart's toolbar by a small script in the browser (`export_script`), which calls the same
plotly.js function with format "svg". Everything happens in the browser: the server renders no image.

A heatmap with numbers in its cells is drawn so that a number is readable or not drawn at all. A figure is built
once, before anyone knows how wide it will be drawn: 820 px on a desktop, 520 px on a desktop zoomed to 150 %,
358 px on a phone. Its builder writes the numbers at a fixed, readable size and records in the layout's meta the
narrowest chart that has room for them (`cell_numbers.NUMBERS_FROM_PX`). Here, a CSS container query on the
chart's own box (Streamlit gives a keyed element the class `st-key-<key>`) hides the numbers in any narrower
chart; the hover and the tables beside the chart still give every value. A style-only `st.html` takes no room.
"""

from __future__ import annotations

import json
import re
import unicodedata

import plotly.graph_objects as go
import streamlit as st

from lessons.common.cell_numbers import NUMBERS_FROM_PX
from lessons.common.figure_text import describe
from lessons.common.plots import with_larger_text
from lessons.common.ui import presentation

SLIDE_LAYOUT_WIDTH_PX = 960  # the width the chart is laid out at for the PNG
SLIDE_SCALE = 2  # ... and drawn at twice that: 1,920 pixels wide
DEFAULT_HEIGHT_PX = 450  # plotly's own default, for figures that set no height
SVG_BUTTON_TITLE = "Download as SVG (for slides)"

_LESSON = "_lesson"  # session state: the lesson this run shows, set by `note_lesson`
_TEXT_WORDS, _TITLE_WORDS, _MAX_NAME_LENGTH = 6, 10, 120


def note_lesson(name: str) -> None:
    """Record which lesson this run shows (app.py calls this once per run): it starts every file name."""
    st.session_state[_LESSON] = name or "home"


def slug(text: str, max_words: int) -> str:
    """'Time flies — like an arrow!' -> 'time-flies-like-an-arrow': lower-case ASCII words joined by hyphens.

    Markup in plotly titles (<br>, <b>) and every character a file system might refuse are dropped; letters
    with accents keep their base letter; what has no ASCII form (emoji, Arabic, Chinese) is left out."""
    without_markup = re.sub(r"<[^>]*>", " ", text)
    ascii_text = unicodedata.normalize("NFKD", without_markup).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    return "-".join(words[:max_words])


def file_name(lesson: str, title: str, about: str) -> str:
    """What a downloaded figure is called, without its extension: lesson, figure title, studied text."""
    parts = [slug(lesson, 3), slug(title, _TITLE_WORDS), slug(about, _TEXT_WORDS)]
    name = "-".join(part for part in parts if part)[:_MAX_NAME_LENGTH].strip("-")
    return name or "figure"


def what_it_shows(figure: go.Figure, key: str | None) -> str:
    """The figure's title; for a figure without one (the page's heading names it), its key without the
    lesson's prefix and the words 'figure' and 'chart': "att_figure_projections" -> "projections"."""
    title = figure.layout.title.text if figure.layout.title is not None else None
    if title:
        return title
    words = re.split(r"[_\W]+", key or "")
    return " ".join(word for word in words[1:] if word not in ("figure", "chart"))


# Three buttons of plotly's toolbar that others already do (zoom in and out: the zoom box and the scroll wheel;
# autoscale: reset axes). Without them the toolbar (SVG, PNG, zoom, pan, reset, full screen) is 183 px wide and
# stays on one row above the narrowest chart (two side by side at 853 px, 251 px each), where the nine buttons
# wrapped onto a second row that reached down onto the title.
REDUNDANT_BUTTONS = ("zoomIn2d", "zoomOut2d", "autoScale2d")


def export_config(figure: go.Figure, name: str) -> dict:
    """The plotly.js settings of a chart: its camera button downloads `name`.png at slide resolution."""
    height = figure.layout.height or DEFAULT_HEIGHT_PX
    return {
        "displaylogo": False,
        "modeBarButtonsToRemove": list(REDUNDANT_BUTTONS),
        "toImageButtonOptions": {
            "format": "png",
            "filename": name,
            "width": SLIDE_LAYOUT_WIDTH_PX,
            "height": height,
            "scale": SLIDE_SCALE,
        },
    }


def show(figure: go.Figure, key: str | None = None, *, about: str | None = None, into=None) -> None:
    """Draw `figure` (in `into`, a container or placeholder, else where the page is), downloadable for slides.

    `about` names what the figure is computed from, for its file name; by default the sidebar's text. A figure
    that writes numbers in its cells needs a `key`: the style that hides them on narrow screens finds it by it."""
    if (figure.layout.meta or {}).get(NUMBERS_FROM_PX) and not key:
        raise ValueError(f"{what_it_shows(figure, key)!r} writes numbers in its cells: show it with a key")
    if about is None:
        context = st.session_state.get("_context")
        about = context.text if context is not None else ""
    if presentation.enlarges():  # figure text grows as much as the page's text
        figure = with_larger_text(figure, presentation.ZOOM)
    shows = what_it_shows(figure, key)
    name = file_name(st.session_state.get(_LESSON, ""), shows, about)
    (into or st).plotly_chart(figure, key=key, config=export_config(figure, name), alt=describe(figure, shows))
    narrowest = (figure.layout.meta or {}).get(NUMBERS_FROM_PX)  # wider for presentation style's larger numbers
    if narrowest and key:  # beside the chart, not `into`: a placeholder holds one element, and the chart is it
        st.html(numbers_rule(key, int(narrowest)))


def numbers_rule(key: str, narrowest_px: int) -> str:
    """CSS that hides the cell numbers of the chart keyed `key` wherever it is narrower than `narrowest_px`."""
    box = f".st-key-{key}"
    return (
        f"<style>{box} {{ container-type: inline-size; }} "
        f"@container (max-width: {narrowest_px - 1}px) {{ {box} .heatmaplayer text {{ display: none; }} }}</style>"
    )


# The toolbar's second download button. Plotly redraws its toolbar now and then, so an observer adds the
# button back wherever a chart's toolbar lacks it. The file name and size are the chart's own (see above).
SVG_BUTTON_SCRIPT = """
<script>
(() => {
  if (window.anatomySvgExport) return;
  window.anatomySvgExport = true;
  const title = TITLE;
  // The icon is built node by node: the sanitiser Streamlit runs on st.html drops a script whose text holds
  // markup, such as an SVG written as a string.
  function icon() {
    const namespace = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(namespace, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("width", "15");
    svg.setAttribute("height", "15");
    svg.setAttribute("aria-hidden", "true");
    const arrow = document.createElementNS(namespace, "path");
    arrow.setAttribute("fill", "currentColor");
    arrow.setAttribute("d", "M5 20h14v-2H5v2zm14-11h-4V3H9v6H5l7 7 7-7z");
    svg.appendChild(arrow);
    return svg;
  }
  function addButton(plot) {
    const bar = plot.querySelector(".modebar");
    if (!bar || bar.querySelector("[data-anatomy-svg]")) return;
    const group = document.createElement("div");
    group.className = "modebar-group";
    const button = document.createElement("a");
    button.className = "modebar-btn";
    button.setAttribute("rel", "tooltip");
    button.setAttribute("data-title", title);
    button.setAttribute("aria-label", title);
    button.setAttribute("role", "button");
    button.dataset.anatomySvg = "1";
    button.appendChild(icon());
    button.addEventListener("click", () => {
      const options = (plot._context && plot._context.toImageButtonOptions) || {};
      window.Plotly.downloadImage(plot, {
        format: "svg", filename: options.filename || "figure",
        width: plot._fullLayout.width, height: plot._fullLayout.height,
      });
    });
    group.appendChild(button);
    bar.prepend(group);
  }
  let pending = false;
  new MutationObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      document.querySelectorAll(".js-plotly-plot").forEach(addButton);
    });
  }).observe(document.body, { childList: true, subtree: true });
})();
</script>
""".replace("TITLE", json.dumps(SVG_BUTTON_TITLE))


# Chart text readable in light and dark. Streamlit's chart theme writes axis labels in a grey that reaches only
# 3.7:1 against white (WCAG asks 4.5:1 of body text); these colours reach 11:1 on white and 12:1 on the dark
# theme's background. Streamlit gives every chart the colour-scheme of the theme the reader chose (light or
# dark, followed at once when it changes), so light-dark() picks the right one without a rerun. Cell numbers
# are left alone: plotly already writes each in black or white, whichever stands out on its cell.
CHART_TEXT_RULES = (
    ".stPlotlyChart :is(.xtick, .ytick, .g-xtitle, .g-ytitle, .cbaxis, .cbtitle, .legendtext, .gtitle) "
    "{ fill: light-dark(#31333F, #DCDAE6) !important; }"
    ".stPlotlyChart :is(.xtick, .ytick, .g-xtitle, .g-ytitle, .cbaxis, .cbtitle) text "
    "{ fill: light-dark(#31333F, #DCDAE6) !important; }"
)


# The chart's toolbar (plotly's modebar: the downloads, zoom, pan, full screen) in a strip of its own above the
# chart. Plotly draws it over the chart's top right corner, where on a phone (a chart 358 px wide, a toolbar of
# 255 px) it covered the title: a tap on the chart shows it, and it stays. Above the chart it covers nothing, at
# any width, and every button stays. The strip is padding of the chart's element container, which Streamlit gives
# the chart's height: allowed to grow (its overflow visible, else it kept that height), it holds strip and chart
# alike, and the chart keeps its own height. Streamlit cuts off what leaves the plot's own box (overflow hidden),
# which would hide the toolbar above it. In full screen, Streamlit's frame has a header band the toolbar sits in.
# The toolbar keeps the size of the usual page's text in presentation style too: it inherited the larger text's
# line height, and its rows grew from 25.6 to 34.6 px, past the strip and onto the chart's title (two charts side
# by side on a tablet), with the SVG button 7 px higher than the others.
TOOLBAR_STRIP_PX = 28  # the toolbar is 25.6 px high
TOOLBAR_RULES = (
    '[data-testid="stElementContainer"]:has(> [data-testid="stFullScreenFrame"] > .stPlotlyChart) '
    f"{{ padding-top: {TOOLBAR_STRIP_PX}px; height: auto !important; overflow: visible !important; }}"
    f".stPlotlyChart .modebar-container {{ top: -{TOOLBAR_STRIP_PX}px !important; }}"
    ".stPlotlyChart .modebar { font-size: 16px; line-height: 1.6; }"
    ".stPlotlyChart .js-plotly-plot { overflow: visible !important; }"
)


# Formulas on a phone: KaTeX draws display formulas at 1.21 times the text, and the app's longest one-line
# formulas (about 450 px) would run past a 390 px screen's column (358 px). Smaller there, they fit; longer
# formulas are written on several lines. Should one still be too wide, its box scrolls instead of cutting it off.
FORMULA_RULES = (
    ".katex-display { overflow-x: auto; overflow-y: hidden; }"
    "@media (max-width: 640px) { .katex-display { font-size: 0.78em; } }"
)


# Literal text (`widgets.show_literal`, the only user of st.text): a box in the code font, so that a learner
# sees where the text starts and ends and which spaces it holds; a word longer than the line breaks anywhere
# rather than running off a phone's screen. The grey reads on both themes' backgrounds.
LITERAL_TEXT_RULES = (
    '[data-testid="stText"] { background: rgba(128, 128, 128, 0.12); border-radius: 0.5rem; '
    "padding: 0.75rem 1rem; overflow-wrap: anywhere; }"
    '[data-testid="stText"] * { font-family: "Source Code Pro", monospace; font-size: 0.875rem; '
    "overflow-wrap: anywhere; }"
)


def prepare_page() -> None:
    """Once per run (app.py): the toolbar above the chart, chart text readable in both themes, formulas that fit
    a phone, and literal text in a box. (The SVG button's script, SVG_BUTTON_SCRIPT, goes with the page's other
    scripts: frame.add_browser_scripts.)"""
    st.html(f"<style>{CHART_TEXT_RULES}{TOOLBAR_RULES}{FORMULA_RULES}{LITERAL_TEXT_RULES}</style>")
