"""Driving the running app in Chromium: open a page, wait until it has painted, read its figures back.

A page has *painted* when Streamlit's script has finished (the app root says `notRunning`), no element is
left stale from the previous run, the page title is drawn, no lazily loaded element is still a placeholder
(`stSkeleton`: plotly's code arrives a moment after the script ends), and every plotly chart holds its SVG.
The wait then asks that the number of charts stays the same for a short while.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

from playwright.sync_api import Page, ViewportSize

from harness.server import ARTIFACTS

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ARTIFACTS / "screenshots"
# The screens the app is checked on, in CSS pixels: a laptop; the same laptop zoomed to 150 %; a tablet held
# upright; a phone (an iPhone 15's or a Pixel 8's 390 × 844); a lecture hall's projector (XGA, 1024 × 768).
SCREENS: dict[str, ViewportSize] = {
    "desktop": {"width": 1280, "height": 800},
    "zoom150": {"width": 853, "height": 533},
    "tablet": {"width": 768, "height": 1024},
    "phone": {"width": 390, "height": 844},
    "projector": {"width": 1024, "height": 768},
}
VIEWPORT = SCREENS["desktop"]
PAINT_TIMEOUT_MS = 120_000  # a cold model load plus a 512-token run on two shared cores, with room to spare
SETTLE_SECONDS = 0.3  # charts must keep their count this long to count as all there

PAINTED = """(minPlots) => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning') return false;
  if (app.dataset.testConnectionState !== 'CONNECTED') return false;
  if (document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]')) return false;
  if (!document.querySelector('h1')) return false;
  const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]');
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  return plots.length >= minPlots && plots.length === charts.length
    && plots.every(plot => plot.querySelector('.main-svg'));
}"""

# Each chart as plotly holds it after drawing (`_fullData`: typed arrays already decoded from the wire).
FIGURES = """() => {
  const digest = (values) => {
    if (values == null) return null;
    if (typeof values === 'string') return values;
    const flat = [];
    const walk = (item) => {
      if (item == null) return;
      if (typeof item === 'object' && item.length !== undefined && typeof item !== 'string') {
        for (let i = 0; i < item.length; i++) walk(item[i]);
      } else flat.push(item);
    };
    walk(values);
    const numbers = flat.filter(value => typeof value === 'number' && Number.isFinite(value));
    const rows = values.length !== undefined && values.length && values[0] != null && values[0].length !== undefined
                 && typeof values[0] !== 'string' ? values.length : null;
    return {
      count: flat.length,
      rows: rows,
      columns: rows ? values[0].length : null,
      sum: numbers.length ? Math.round(numbers.reduce((a, b) => a + b, 0) * 1e4) / 1e4 : null,
      labels: numbers.length === flat.length ? null : flat.slice(0, 600).map(String),
    };
  };
  return [...document.querySelectorAll('.js-plotly-plot')].map(plot => ({
    title: ((plot.layout.title && plot.layout.title.text) || '').replace(/<[^>]+>/g, ''),
    subtitle: ((plot.layout.title && plot.layout.title.subtitle && plot.layout.title.subtitle.text) || '')
      .replace(/<br>/g, ' ').replace(/<[^>]+>/g, ''),
    shapes: (plot.layout.shapes || []).map(shape => [shape.x0, shape.x1, shape.y0, shape.y1]),
    annotations: (plot.layout.annotations || []).map(note => note.text),
    traces: (plot._fullData || []).map(trace => ({
      type: trace.type, name: trace.name || '',
      x: digest(trace.x), y: digest(trace.y), z: digest(trace.z), text: digest(trace.text),
    })),
  }));
}"""

# The rows of each heatmap trace, to check what the numbers are (attention rows sum to 1).
HEATMAP_ROWS = """(index) => {
  const plot = document.querySelectorAll('.js-plotly-plot')[index];
  return plot._fullData.filter(trace => trace.type === 'heatmap').map(trace => [...trace.z].map(row => [...row]));
}"""


# Labels drawn over labels, or cut off, in every chart and in Streamlit's own labels. A label is any text plotly
# draws around a chart (titles and subtitles, axis titles, tick labels, annotations, legend entries, colour bar
# ticks). Each label is taken as the quadrilateral its glyphs fill on screen (rotated tick labels are rotated boxes,
# not the larger upright boxes around them); two labels overlap when they share more than 2 px across every
# direction; a label is drawn over a plot when it enters a plot area, and cut off when it sticks out of its chart;
# the chart's toolbar (plotly's modebar, measured where it shows on hover or tap) must sit on no label. What a
# heatmap writes in its cells (numbers, ✓ and ✗, letters), where it shows, must not stand on what its neighbours
# write. Streamlit's own labels are cut off when they end in an ellipsis, and a displayed formula is cut off when it
# is wider than its box.
LAYOUT_PROBLEMS = (Path(__file__).parent / "layout_problems.js").read_text(encoding="utf-8")
# A chart's numbers are hidden on a narrow screen by a style that arrives just after the chart (`charts.show`), and a
# chart first drawn before its box has its width is drawn again: what the first measurement finds is measured again
# for up to this long, and only what stays is a problem.
SETTLE_S = 5.0

# Where each chart lies on the page and each text, drag area and colour bar of a chart lies in it (x, y, width,
# height in whole pixels), with Streamlit's own blocks: read again and again after the window changes size, until it
# stays put; and compared between a page resized to a size and one opened at it.
GEOMETRY = """() => {
  const box = (node, origin) => {
    const b = node.getBoundingClientRect();
    return [Math.round(b.x - origin.x), Math.round(b.y - origin.y), Math.round(b.width), Math.round(b.height)];
  };
  const page = {x: 0, y: 0};
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map(chart => {
    const frame = chart.getBoundingClientRect();
    return [box(chart, page), ...[...chart.querySelectorAll('text, rect.nsewdrag, rect.cbbg')]
      .map(node => [node.tagName, node.textContent.slice(0, 40), getComputedStyle(node).display, ...box(node, frame)])];
  });
  const blocks = [...document.querySelectorAll('[data-testid="stSidebar"], [data-testid="stMainBlockContainer"], '
    + 'h1, h2, h3, .katex-display, [data-testid="stMarkdownContainer"]')].map(node => box(node, page));
  return {charts, blocks};
}"""
# A resized page counts as laid out again once its geometry has stayed the same this long.
RESIZE_QUIET_S = 0.5


@dataclass
class AppPage:
    """One browser tab on the app, with the requests it made."""

    page: Page
    base_url: str
    requests: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.page.set_default_timeout(PAINT_TIMEOUT_MS)
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("websocket", lambda socket: self.requests.append(socket.url))

    # ---- going places ---------------------------------------------------------------------------------

    def open(self, path: str = "", min_plots: int = 0, **query: str | int) -> AppPage:
        """Go to `/path?query` and wait until it has painted with at least `min_plots` charts."""
        address = f"{self.base_url}/{path}" + (f"?{urlencode(query)}" if query else "")
        self.page.goto(address, wait_until="domcontentloaded")
        return self.wait_until_painted(min_plots)

    def wait_until_painted(self, min_plots: int = 0) -> AppPage:
        deadline = time.monotonic() + PAINT_TIMEOUT_MS / 1000
        while time.monotonic() < deadline:
            self.page.wait_for_function(PAINTED, arg=min_plots, polling="raf", timeout=PAINT_TIMEOUT_MS)
            count = self.plot_count()
            time.sleep(SETTLE_SECONDS)
            if self.page.evaluate(PAINTED, min_plots) and self.plot_count() == count:
                return self
        raise TimeoutError(f"{self.page.url} kept changing its charts for {PAINT_TIMEOUT_MS / 1000:.0f} s")

    def resize(self, screen: ViewportSize) -> AppPage:
        """Make the window `screen`'s size, as a learner who zooms in (150 % turns a 1280 px window into 853 px)
        or narrows it, and wait until the page has been laid out for it: its `geometry()` unchanged for
        RESIZE_QUIET_S (each chart is drawn again at its new width a moment after the window changed)."""
        self.page.set_viewport_size(screen)
        deadline = time.monotonic() + PAINT_TIMEOUT_MS / 1000
        last, still_since = self.geometry(), time.monotonic()
        while time.monotonic() - still_since < RESIZE_QUIET_S:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.page.url} kept moving after a resize to {screen}")
            self.page.wait_for_timeout(100)
            now = self.geometry()
            if now != last:
                last, still_since = now, time.monotonic()
        return self

    def text_box(self):
        """The sidebar's "Text to study" (its help button carries the same name, hence the role)."""
        return self.page.get_by_role("textbox", name="Text to study", exact=True)

    def type_text(self, text: str) -> None:
        """Replace the sidebar's text and commit it (Streamlit reads a text area on Ctrl+Enter)."""
        box = self.text_box()
        box.fill(text)
        box.press("Control+Enter")

    def type_text_and_wait_for_new_figures(self, text: str, min_plots: int = 1) -> list[dict]:
        self.page.evaluate(f"() => {{ window.__figuresBefore = JSON.stringify(({FIGURES})()); }}")
        self.type_text(text)
        self.page.wait_for_function(
            f"() => JSON.stringify(({FIGURES})()) !== window.__figuresBefore", polling=250, timeout=PAINT_TIMEOUT_MS
        )
        self.wait_until_painted(min_plots)
        return self.figures()

    # ---- reading the page -----------------------------------------------------------------------------

    def plot_count(self) -> int:
        return self.page.locator(".js-plotly-plot").count()

    def figures(self) -> list[dict]:
        return self.page.evaluate(FIGURES)

    def heatmap_rows(self, plot_index: int) -> list[list[list[float]]]:
        return self.page.evaluate(HEATMAP_ROWS, plot_index)

    def heatmap_cell_text(self, plot_index: int = 0) -> str:
        """The text drawn inside the heatmap cells of chart `plot_index`, in drawing order, joined."""
        return self.page.evaluate(
            "(index) => [...document.querySelectorAll('.js-plotly-plot')[index].querySelectorAll('.heatmaplayer text')]"
            ".map(cell => cell.textContent).join('')",
            plot_index,
        )

    def geometry(self) -> dict:
        """Where everything lies (see GEOMETRY)."""
        return self.page.evaluate(GEOMETRY)

    def layout_problems(self) -> list[str]:
        """Labels drawn over labels or cut off, anywhere on the page, once the page has settled (see
        LAYOUT_PROBLEMS and SETTLE_S)."""
        problems = self.page.evaluate(LAYOUT_PROBLEMS)
        deadline = time.monotonic() + SETTLE_S
        while problems and time.monotonic() < deadline:
            self.page.wait_for_timeout(500)
            problems = self.page.evaluate(LAYOUT_PROBLEMS)
        return problems

    def exceptions(self) -> list[str]:
        return self.page.locator('[data-testid="stException"]').all_inner_texts()

    def query(self) -> dict[str, str]:
        return dict(parse_qsl(urlsplit(self.page.url).query))

    def title(self) -> str:
        return self.page.locator("h1").first.inner_text()

    def requests_off_loopback(self) -> list[str]:
        return [url for url in self.requests if not is_loopback(url)]

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path


def is_loopback(url: str) -> bool:
    """Requests the app may make: to itself on 127.0.0.1, or browser-internal ones (data:, blob:, about:)."""
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return True
    return parts.hostname in ("127.0.0.1", "localhost", "::1")
