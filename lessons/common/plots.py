"""Pieces every figure shares: safe labels, a labelled heatmap, one look."""

from __future__ import annotations

import functools
import html
from collections.abc import Callable, Sequence

import numpy as np
import plotly.basedatatypes
import plotly.graph_objects as go
import plotly.io as pio

from anatomy.devices import float64_on_the_cpu
from lessons.common.cell_numbers import (
    CELL_FONT,
    NUMBERS_FROM_PX,
    numbers_fit,
    record_numbers,
    rows_fit,
    widest_number,
    width_for_numbers,
)

ATTENTION_SCALE = "Purples"  # weights in [0, 1]
DIVERGING_SCALE = "RdBu_r"  # signed values, centred on 0
# One colour per head where heads are drawn together (the head view). Chosen so that any two of the first twelve
# stay at least ΔE*ab 17 apart under typical vision and under simulated protanopia, deuteranopia and
# tritanopia (scripts/colour_vision.py prints the check): plotly's Dark24, used before, put two of the first
# twelve 1.7 apart for a deuteranope, the same colour. Dark enough for lines on white.
HEAD_COLOURS = (
    "#511CFB",
    "#FB0D0D",
    "#620042",
    "#17BECF",
    "#E48F72",
    "#782AB6",
    "#FF0092",
    "#AF0038",
    "#000000",
    "#A777F1",
    "#2CA02C",
    "#750D86",
)
# Past twelve heads (BERT-large has 16, Llama-2-7B 32) the colours come round again, so a second round of heads
# is drawn dashed and a third dotted (bars: hatched and stippled): 36 heads told apart, every one also named.
HEAD_DASHES = ("solid", "dash", "dot")
HEAD_PATTERNS = ("", "/", ".")


# Building a figure spends much of its time taking property paths apart: every `update_layout(xaxis_title_text=…)`,
# `update_xaxes`, `add_trace` and `make_subplots` turns strings such as "xaxis2.title_text" into key tuples, and
# plotly parses the same few hundred strings anew each time (a third of the figure-building time of a lesson
# page). The parse depends on the string alone, so one parse per string serves every later figure: the same
# tuples, the same figures (tests/lessons/common/test_path_parse.py compares every lesson's figures).
# plotly's own function, kept where plotly's module holds it: a second import of this module (a reload) wraps it
# again, not the wrapper.
_PLOTLY_PATH_PARSE = getattr(plotly.basedatatypes, "_parse_path_uncached", plotly.basedatatypes._str_to_dict_path_full)
_PARSED_PATHS_KEPT = 4096


@functools.lru_cache(maxsize=_PARSED_PATHS_KEPT)
def _parsed_path(key_path: str) -> tuple[tuple, tuple]:
    path, positions = _PLOTLY_PATH_PARSE(key_path)
    return path, tuple(positions)


def parse_path_once(key_path: str) -> tuple[tuple, list]:
    """plotly's own parse of a property path (`_str_to_dict_path_full`), remembered per string."""
    if not isinstance(key_path, str):  # plotly's own answer (and error) for anything else
        return _PLOTLY_PATH_PARSE(key_path)
    path, positions = _parsed_path(key_path)
    return path, list(positions)  # a fresh list, as plotly returns: a caller may change it


plotly.basedatatypes._parse_path_uncached = _PLOTLY_PATH_PARSE
plotly.basedatatypes._str_to_dict_path_full = parse_path_once


def head_colour(head: int) -> str:
    """The colour of head `head` (counted from 0) wherever heads are drawn together."""
    return HEAD_COLOURS[head % len(HEAD_COLOURS)]


def head_dash(head: int) -> str:
    """The line style of head `head`: solid for the first round of colours, then dashed, then dotted."""
    return HEAD_DASHES[head // len(HEAD_COLOURS) % len(HEAD_DASHES)]


def head_pattern(head: int) -> str:
    """The fill pattern of head `head`'s bar, the bars' counterpart of `head_dash`."""
    return HEAD_PATTERNS[head // len(HEAD_COLOURS) % len(HEAD_PATTERNS)]


FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=13)
# A few settings in the spirit of plotly_white. Applying the full built-in template by name copies it on
# every figure (about 40 ms each); this small one costs almost nothing.
LIGHT = go.layout.Template(
    layout=dict(
        paper_bgcolor="white",
        plot_bgcolor="white",
        font=FONT,
        # Tick labels that do not fit level are turned to read upwards, never by plotly's default 30°: turned so,
        # neighbours stood on each other on a projector's 1024 px in presentation style (the feed-forward map's
        # neuron labels, the trained decoder's vocabulary), where plotly's estimate of their width fell short.
        xaxis=dict(gridcolor="#EBEBF0", zerolinecolor="#D5D5E0", autotickangles=[0, -90]),
        yaxis=dict(gridcolor="#EBEBF0", zerolinecolor="#D5D5E0"),
        colorway=["#5B4BDB", "#E4572E", "#17BEBB", "#FFC914", "#76B041", "#9C6ADE", "#2E86AB"],
    )
)
# Every figure of the app starts from this template: creating a figure copies the default template, and
# plotly's own default is far larger than what we use.
pio.templates["anatomy"] = LIGHT
pio.templates.default = "anatomy"


def safe_label(text: str) -> str:
    """A token or word as plotly should show it: plotly reads a few HTML tags in labels, so < > & are
    written as entities and a user's "<b>" appears as those three characters, not as bold text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def as_array(values) -> np.ndarray:
    """numpy view of a tensor or nested list (float64 for exact hover values)."""
    if hasattr(values, "detach"):
        values = float64_on_the_cpu(values).numpy()
    return np.asarray(values, dtype=float)


def compact(values) -> np.ndarray:
    """float32 copy of the values: half the bytes of float64 on the wire, still about 7 significant digits,
    and exact where it matters here (a masked weight stays exactly 0.0, −∞ stays −∞)."""
    return as_array(values).astype(np.float32)


def heatmap(
    matrix,
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    title: str = "",
    colorscale: str = ATTENTION_SCALE,
    zmin: float | None = None,
    zmax: float | None = None,
    show_values: bool | None = False,
    value_format: str = ".3f",
    row_title: str = "",
    column_title: str = "",
    hover_name: str = "value",
    colorbar: dict | None = None,
    height: int | None = None,
) -> go.Figure:
    """A matrix with one labelled row per token. Axes are positional (a repeated word keeps its own row)
    and row 0 is at the top, as matrices are written on paper.

    `show_values`: write each value in its cell (True), or only where a desktop has room for them (None). Either
    way the numbers are written at the cells' font size, on rows tall enough for them, and hidden on screens too
    narrow to hold them (`cell_numbers`). `colorbar` (plotly's settings) places the colour bar; `height` in px."""
    values = as_array(matrix)
    rows, columns = values.shape
    row_text = [safe_label(label) for label in row_labels]
    column_text = [safe_label(label) for label in column_labels]
    needed_px = cell_numbers_px([values], columns, row_text, height, show_values, value_format, colorbar)
    show = needed_px is not None
    hover_rows = np.repeat(np.array(row_text, dtype=object)[:, None], columns, axis=1)
    hover_columns = np.repeat(np.array(column_text, dtype=object)[None, :], rows, axis=0)
    trace = go.Heatmap(
        z=values,
        x=list(range(columns)),
        y=list(range(rows)),
        colorscale=colorscale,
        zmin=zmin,
        zmax=zmax,
        customdata=np.dstack([hover_rows, hover_columns]),
        hovertemplate=(
            f"{row_title or 'row'} %{{y}}: %{{customdata[0]}}<br>"
            f"{column_title or 'column'} %{{x}}: %{{customdata[1]}}<br>"
            f"{hover_name} = %{{z:{value_format}}}<extra></extra>"
        ),
        texttemplate=f"%{{z:{value_format}}}" if show else None,
        textfont=CELL_FONT if show else None,
        colorbar=colorbar,
    )
    layout = base_layout(title, height)
    layout["xaxis"] = dict(tickvals=list(range(columns)), ticktext=column_text, side="top", title=column_title)
    layout["yaxis"] = dict(tickvals=list(range(rows)), ticktext=row_text, autorange="reversed", title=row_title)
    figure = go.Figure(data=[trace], layout=layout)
    record_numbers(figure, needed_px)
    return figure


def cell_numbers_px(
    matrices: Sequence[np.ndarray],
    columns_across: int,
    row_labels: Sequence[str],
    height: int | None,
    show_values: bool | None,
    value_format: str,
    colorbar: dict | None = None,
) -> int | None:
    """How wide a heatmap must be drawn for the values of `matrices` written in its cells (`cell_numbers`), or
    None where they are not written: asked not to (`show_values` False), without room on a desktop (unless asked
    to, True), or on rows too low for them. `columns_across`: the cells across, all panels together;
    `row_labels` stand at the left; `colorbar` as plotly's settings (None: beside the plot)."""
    if show_values is False or not rows_fit(len(row_labels), height):
        return None  # measured only where numbers may be written: it formats every value
    characters = widest_number(*matrices, number_format=value_format)
    needed_px = width_for_numbers(columns_across, characters, _side_room(row_labels, colorbar))
    return needed_px if numbers_fit(needed_px, show_values) else None


COLOUR_BAR_BESIDE_PX = 100  # a colour bar at the right, its numbers and its gap to the plot
SIDE_MARGIN_PX = 10  # the app's margin at either side of a chart (`base_layout`)


def _side_room(row_labels: Sequence[str], colorbar: dict | None) -> int:
    """The px of a heatmap's width that are not its cells: the margins, the row labels and a colour bar that
    stands beside the plot (one laid across underneath takes none)."""
    beside = not colorbar or colorbar.get("orientation") != "h"
    widest = max(map(label_width_px, row_labels), default=0.0)
    return int(2 * SIDE_MARGIN_PX + LEFT_LABEL_REACH_PX + widest + (COLOUR_BAR_BESIDE_PX if beside else 0))


def base_layout(title: str = "", height: int | None = None) -> dict:
    """The app's common look (white background, readable font, tight margins) as a layout dict.

    A title too long for a phone is broken between phrases (`title_lines`): its first line is the title, the
    others stand under it in plotly's smaller subtitle, and a figure of a given height grows by their height.
    A subtitle rather than more lines of title: plotly lifts the extra lines of a title that pushes the margin
    as if it stood on the plot, and they left the chart at its top edge."""
    if not title:
        return dict(title=None, margin=dict(l=SIDE_MARGIN_PX, r=SIDE_MARGIN_PX, t=30, b=10), height=height)
    first_line, *other_lines = title_lines(title)
    added_lines = len(other_lines) - title.count("<br>")
    if height is not None:
        height += SUBTITLE_LINE_PX * added_lines
    # The title pushes the top margin itself (automargin, measured from the container), so it never sits on
    # tick labels drawn above a matrix or on an axis title, whatever their length.
    heading = dict(
        text=first_line, x=0, xanchor="left", automargin=True, yref="container", y=1, yanchor="top", pad=dict(t=6, b=8)
    )
    if other_lines:
        heading["subtitle"] = dict(text="<br>".join(other_lines))
    return dict(title=heading, margin=dict(l=SIDE_MARGIN_PX, r=SIDE_MARGIN_PX, t=20, b=10), height=height)


def style(figure: go.Figure, title: str = "", height: int | None = None) -> go.Figure:
    """Apply the common look to a figure built elsewhere."""
    figure.update_layout(**base_layout(title, height))
    return figure


def with_larger_text(figure: go.Figure, factor: float) -> go.Figure:
    """A copy of `figure` whose every text (titles, axis labels, tick labels, cell numbers, annotations,
    legend, colour bar) is `factor` times larger: for a projector. The figure itself is left as it was, since
    it may be a cached one that other sessions draw too."""
    larger = go.Figure(figure)
    base = float(larger.layout.font.size or 13)  # 13: FONT's size, the template's
    larger.update_layout(font_size=round(base * factor))
    # Room for the larger text: the margins (where titles, legends and colour bars sit) and the height grow too.
    margin = larger.layout.margin
    for side in ("l", "r", "t", "b"):
        if getattr(margin, side) is not None:
            setattr(margin, side, round(getattr(margin, side) * factor))
    if larger.layout.height is not None:
        larger.layout.height = round(larger.layout.height * factor)
    for path in _explicit_font_sizes(larger.layout.to_plotly_json()):
        _scale_at(larger.layout, path, factor)
    for trace in larger.data:
        for attribute in ("textfont", "insidetextfont", "outsidetextfont"):
            font = getattr(trace, attribute, None)
            if font is not None and font.size is not None:
                font.size = _scaled(font.size, factor)
    _titles_beside_colour_bars(larger)
    _longer_colour_bars(larger, factor)
    numbers_from_px = (larger.layout.meta or {}).get(NUMBERS_FROM_PX)
    if numbers_from_px:  # larger numbers need wider cells
        record_numbers(larger, round(numbers_from_px * factor))
    return larger


# --- Room for tick labels, given before plotly draws --------------------------------------------------------
# Plotly learns how much room a chart's tick labels need only by drawing them. Where they need more than the
# margins give (automargin), it widens the margins and draws the whole chart a second time: at 48 tokens a
# side, that second pass took a fifth of a second per chart in Chromium on our 2-core machine. Margins that
# already hold the labels spare it. They are worked out from upper bounds of the labels' widths, so the labels
# always fit; automargin stays on as the safety net, at the cost of the second pass only.

# Upper bounds of the advance widths of Source Sans, the font Streamlit draws chart text in, in ems (measured
# in Chromium with canvas measureText: "i" is 0.246 em, "0" 0.497, "m" 0.829, "@" 0.847).
_EM_BOUNDS = (
    (0.26, " ',.:;|ijl"),
    (0.36, "!()-/I[\\]{}frt"),
    (0.50, '"#$*+0123456789<=>?^_~cesxz'),
    (0.56, "abdghknopquvy"),
    (0.67, "&`ABCDEFGHJKLNOPQRSTUVXYZ"),
    (0.85, "%@MWmw"),
)
_EM_OF = {character: em for em, characters in _EM_BOUNDS for character in characters}
_EM_LATIN_GREEK_CYRILLIC = 0.85  # accented letters, Greek and Cyrillic (below U+0530): "æ" is 0.778 em
_EM_ANY = 1.3  # the rest: CJK and emoji (about 1 em) and symbols, drawn from whatever font the reader has
# Plotly draws tick labels at the app's font size (FONT) when a figure sets it, as the lecture mode does, and at
# Streamlit's 12 px otherwise: widths for 13 px hold in both.
LABEL_FONT_PX = 13
# Measured in Chromium (plotly.js as Streamlit 1.67 bundles it): how far a chart's labels reach past its plot
# area beyond their own length, the padding between plot and axis and plotly's label stand-off included, and the
# height a one-line title takes above them (its 6 px pad, a line of 1.4 times the text, its 8 px pad).
LEFT_LABEL_REACH_PX = 27  # labels of a y axis at the left, written across
TOP_TURNED_LABEL_REACH_PX = 27  # labels of an x axis on top, turned to read upwards (tickangle −90)
ONE_LINE_TITLE_PX = 36


def label_width_px(label: str, font_px: float = LABEL_FONT_PX) -> float:
    """At least the width of `label` on screen, as plotly shows it (an entity such as "&lt;" is one
    character), in pixels."""
    shown = html.unescape(label)
    return font_px * sum(_EM_OF.get(character, _em_beyond_ascii(character)) for character in shown)


def _em_beyond_ascii(character: str) -> float:
    return _EM_LATIN_GREEK_CYRILLIC if ord(character) < 0x530 else _EM_ANY


# Titles on a phone. A figure cannot know how wide it will be drawn, so a title too wide for a phone's chart
# is broken where it fits one: its first line stays the title, and the rest goes under it, in plotly's smaller
# grey subtitle. It is broken between phrases only, so that the title reads as a whole heading and the subtitle
# as its details: "Decoder masked self-attention" over "(T × T, causal)", never "… (T × T," over "causal)".
TITLE_ROOM_PX = 340  # a phone's chart is 358 px wide; its title starts 4 px in and keeps clear of the right edge
# Streamlit draws chart titles in bold 16 px (measured in Chromium: "Next-token probabilities, one row per step"
# is 296 px wide), subtitles in regular type under 12 px; the widths are upper bounds (`label_width_px`), the
# title's 5 % wider for bold type.
TITLE_FONT_PX = 16 * 1.05
SUBTITLE_FONT_PX = 12
SUBTITLE_LINE_PX = 18  # the height one more line of subtitle takes
# Where a title may be broken, strongest first: after a heading (": ", the colon is dropped), before an aside in
# brackets (" ("), at a dash (" — "), between the items of a list (", ", the comma is dropped). Breaks inside
# brackets are never taken.
PHRASE_BREAKS = (": ", " (", " — ", ", ")


def fits_title(line: str) -> bool:
    """Whether `line` fits a phone's chart as a line of title."""
    return label_width_px(line, TITLE_FONT_PX) <= TITLE_ROOM_PX


def fits_subtitle(line: str) -> bool:
    """Whether `line` fits a phone's chart as a line of subtitle."""
    return label_width_px(line, SUBTITLE_FONT_PX) <= TITLE_ROOM_PX


def title_lines(title: str) -> list[str]:
    """`title` as the lines plotly draws it: a first line that fits a phone as the title, then lines that fit
    it as the subtitle, each broken between phrases (PHRASE_BREAKS). Only a phrase too long for a line on its
    own is broken between words. Lines joined by <br> in `title` stay apart."""
    lines: list[str] = []
    for given in title.split("<br>"):
        rest = given
        while not (fits := fits_subtitle if lines else fits_title)(rest):
            split = _split_between_phrases(rest, fits) or _split_between_words(rest, fits)
            if split is None:  # a single word longer than the line: plotly draws it as it is
                break
            line, rest = split
            lines.append(line)
        lines.append(rest)
    return lines


def _split_between_phrases(text: str, fits: Callable[[str], bool]) -> tuple[str, str] | None:
    """(first line, the rest) for the longest first line that `fits` and ends at the strongest phrase break
    `text` has there, or None if no phrase break comes early enough."""
    depth = 0
    breaks: dict[str, list[int]] = {mark: [] for mark in PHRASE_BREAKS}
    for index, character in enumerate(text):
        for mark in PHRASE_BREAKS:
            if depth == 0 and text.startswith(mark, index) and index > 0 and fits(text[:index]):
                breaks[mark].append(index)
        depth += {"(": 1, ")": -1}.get(character, 0)
    for mark in PHRASE_BREAKS:
        if breaks[mark]:
            cut = breaks[mark][-1]
            kept = "(" if mark == " (" else ""  # the bracket opens the next line
            return text[:cut], kept + text[cut + len(mark) :]
    return None


def _split_between_words(text: str, fits: Callable[[str], bool]) -> tuple[str, str] | None:
    """(first line, the rest) broken at the last space with a first line that `fits` (else at the first
    space), or None for a single word."""
    spaces = [index for index, character in enumerate(text) if character == " " and index > 0]
    fitting = [index for index in spaces if fits(text[:index])]
    cut = fitting[-1] if fitting else next(iter(spaces), None)
    return (text[:cut], text[cut + 1 :].lstrip()) if cut is not None else None


def with_measured_margins(figure: go.Figure, **margins_px: int) -> go.Figure:
    """`figure` with the margins that plotly's automargin arrives at for its labels, title, legend and colour bar,
    read back in Chromium (`_fullLayout._size`) at desktop and phone widths and given before it draws: plotly then
    draws once, instead of drawing, measuring what it drew and drawing again. Where the text is larger than
    measured (presentation style, a title that wraps), automargin still pushes them further.

    The top margin is measured under a one-line title. Each line of subtitle adds its height to it: plotly's
    automargin makes room for the title and for the labels on top each on its own, not for both, and on a
    phone a subtitle sat on the axis title above a matrix."""
    subtitle = figure.layout.title.subtitle.text
    if subtitle and "t" in margins_px:
        margins_px["t"] += SUBTITLE_LINE_PX * (subtitle.count("<br>") + 1)
    return figure.update_layout(margin=margins_px)


def make_room_for_labels(figure: go.Figure, row_labels: Sequence[str], column_labels: Sequence[str]) -> None:
    """Margins that hold `row_labels` written across at the left and `column_labels` turned upwards on top,
    below a one-line title (a figure whose title runs over several lines keeps plotly's own margins)."""
    title = figure.layout.title.text or ""
    if "<br>" in title or figure.layout.title.subtitle.text:
        return
    title_px = ONE_LINE_TITLE_PX if title else 0
    widest_row = max(map(label_width_px, row_labels), default=0.0)
    widest_column = max(map(label_width_px, column_labels), default=0.0)
    figure.update_layout(
        margin=dict(
            l=max(figure.layout.margin.l or 0, int(widest_row) + 1 + LEFT_LABEL_REACH_PX),
            t=max(figure.layout.margin.t or 0, int(widest_column) + 1 + TOP_TURNED_LABEL_REACH_PX + title_px),
        )
    )


def _titles_beside_colour_bars(figure: go.Figure) -> None:
    """Moves the title of every upright colour bar from its top to its side. On top, plotly leaves 5 px
    between the title and the bar, but the label of the bar's top tick rises half its height above the bar:
    at 1.35 times the text size the two touch."""
    for bar in _colour_bars(figure):
        if bar.title.text and bar.orientation in (None, "v") and bar.title.side in (None, "top"):
            bar.title.side = "right"


def _longer_colour_bars(figure: go.Figure, factor: float) -> None:
    """Makes every colour bar whose length is given in pixels (one lying under a matrix) `factor` times longer, as
    its numbers are: at 1.35 times the text size, −40 to 40 no longer fitted along 180 px, plotly turned them
    upright, and they ran out of the chart at its foot."""
    for bar in _colour_bars(figure):
        if bar.lenmode == "pixels" and bar.len is not None:
            bar.len = round(bar.len * factor)


def _colour_bars(figure: go.Figure) -> list:
    """The colour bar of every trace that has one and of every colour axis."""
    bars = [getattr(trace, "colorbar", None) for trace in figure.data]
    bars += [axis.colorbar for axis in figure.select_coloraxes()]
    return [bar for bar in bars if bar is not None]


def _explicit_font_sizes(layout: dict | list, path: tuple = ()) -> list[tuple]:
    """Paths (keys and list indices) to every font with a size of its own inside a layout's JSON."""
    found = []
    for key, value in layout.items() if isinstance(layout, dict) else enumerate(layout):
        is_font = isinstance(key, str) and key.endswith("font")  # font, tickfont, ...
        if is_font and isinstance(value, dict) and value.get("size") is not None and path:
            found.append((*path, key))
        elif isinstance(value, dict | list) and key != "template":
            found.extend(_explicit_font_sizes(value, (*path, key)))
    return found


def _scale_at(layout, path: tuple, factor: float) -> None:
    node = layout
    for key in path:
        node = node[key]
    node.size = _scaled(node.size, factor)


def _scaled(size, factor: float):
    if isinstance(size, int | float):
        return round(size * factor)
    return [round(each * factor) for each in size]  # a size per point


def cell_frame(row: int, column: int, colour: str, width: int = 3) -> dict:
    """A frame around one cell of a heatmap on category axes (cell k spans k − 0.5 … k + 0.5), for add_shape."""
    return dict(
        type="rect",
        xref="x",
        yref="y",
        x0=column - 0.5,
        x1=column + 0.5,
        y0=row - 0.5,
        y1=row + 0.5,
        line=dict(color=colour, width=width),
    )
