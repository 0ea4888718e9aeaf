"""Figures of the tokenization lesson: the user's text with every token's characters coloured, and the
rows of the embedding table that the tokens look up."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from lessons.common.labels import token_label
from lessons.common.matrix_figures import token_names
from lessons.common.plots import DIVERGING_SCALE, as_array, safe_label, style

# What a character cell can belong to, with its colour. Neighbouring tokens alternate between two shades
# of their kind, so the boundary between "trans" and "##formers" stays visible.
CELL_KINDS = (
    ("no token (spaces, dropped characters)", "#f1f3f5"),
    ("a token that starts a word", "#a5d8ff"),
    ("", "#4dabf7"),
    ("a ## piece that continues a word", "#ffd8a8"),
    ("", "#ffa94d"),
    ("[UNK]: no piece in the vocabulary", "#ff6b6b"),
)
TOKEN_KINDS = ("word", "continuation", "unknown")
_FIRST_CODE = {"word": 1, "continuation": 3, "unknown": 5}
ROW_HEIGHT = 24  # pixels per line of characters
# Characters per line. Every cell must be as wide as its glyph (9 px in the 14 px monospace font) on the
# narrowest chart: on a phone the cells get about 300 px, on a desktop zoomed to 150 % about 470. At 64 a line the
# letters of a phone's strip stood on each other (cells of 5 px); at 32 they have 9.4 px or more.
LINE_WIDTH = 32
# The legend stands below the text, one kind per line: a line of all four is wider than a phone, and plotly
# would fold it into a box that scrolls over the text. Four lines of about 20 px, and the title above.
LEGEND_HEIGHT = 4 * 20 + 10
TITLE_HEIGHT = 60


def highlight_rows(texts: Sequence[str], line_width: int = LINE_WIDTH) -> list[tuple[int, int, int] | None]:
    """The rows `token_highlight` lays the texts out in: (sentence, offset of the first character, end) per
    line, and None for the empty row between two sentences."""
    rows: list[tuple[int, int, int] | None] = []
    for sentence, text in enumerate(texts):
        if sentence:
            rows.append(None)
        rows.extend((sentence, start, end) for start, end in _wrap(text, line_width))
    return rows


def token_highlight(
    texts: Sequence[str],
    token_labels: Sequence[str],
    spans: Sequence[tuple[int, int, int]],
    kinds: Sequence[str],
    line_width: int = LINE_WIDTH,
    sentence_names: Sequence[str] | None = None,
    title: str = "",
    first_row: int = 0,
    max_rows: int | None = None,
) -> go.Figure:
    """The texts laid out one character per cell, each cell coloured by the token that covers it.

    spans[i] = (sentence, start, end) of token i in texts[sentence]; a token with start == end (a special
    token) covers no character. kinds[i] is one of TOKEN_KINDS. Lines wrap at `line_width` characters and
    at newlines (see `highlight_rows`); only rows `first_row …` are drawn, at most `max_rows` of them (every
    character is a text element the browser must lay out). Each row is labelled with the offset of its first
    character, after the sentence's name when there are two (A and B unless `sentence_names` says otherwise).
    """
    if sentence_names is None:
        sentence_names = ("A", "B") if len(texts) > 1 else ("",)
    all_rows = highlight_rows(texts, line_width)
    rows = all_rows[first_row:] if max_rows is None else all_rows[first_row : first_row + max_rows]
    owners = [_owner_of_each_character(len(text), sentence, spans) for sentence, text in enumerate(texts)]

    codes = np.full((len(rows), line_width), np.nan, dtype=np.float32)
    glyphs = np.full((len(rows), line_width), "", dtype=object)
    hovers = np.full((len(rows), line_width), "", dtype=object)
    row_labels = []
    for row_index, row in enumerate(rows):
        if row is None:
            row_labels.append("")
            continue
        sentence, start, end = row
        row_labels.append(f"{sentence_names[sentence]} {start}".strip())
        first_of_glyph = 0  # the cell that draws the glyph the current character is part of
        for column, offset in enumerate(range(start, end)):
            character = texts[sentence][offset]
            token = owners[sentence][offset]
            codes[row_index, column] = _cell_code(token, kinds)
            if column and _joins_the_one_before(texts[sentence], offset):
                glyphs[row_index, first_of_glyph] += safe_label(character)
            else:
                first_of_glyph = column
                glyphs[row_index, column] = safe_label(_visible(character))
            owner_text = "no token" if token < 0 else f"token {safe_label(token_label(token, token_labels[token]))}"
            hovers[row_index, column] = f"character {offset}: {safe_label(_named(character))}<br>{owner_text}"

    figure = go.Figure(
        go.Heatmap(
            z=codes,
            text=glyphs,
            customdata=hovers,
            texttemplate="%{text}",
            textfont=dict(family="DejaVu Sans Mono, Menlo, Consolas, monospace", size=14),
            colorscale=_stepped_colorscale([color for _, color in CELL_KINDS]),
            zmin=-0.5,
            zmax=len(CELL_KINDS) - 0.5,
            showscale=False,
            xgap=1,
            ygap=1,
            hoverongaps=False,
            hovertemplate="%{customdata}<extra></extra>",
        )
    )
    for name, color in CELL_KINDS:
        if name:  # a legend entry per kind (the second shade of a kind needs none)
            figure.add_trace(
                go.Scatter(
                    x=[None],
                    y=[None],
                    mode="markers",
                    name=name,
                    hoverinfo="skip",
                    marker=dict(symbol="square", size=14, color=color),
                )
            )
    figure.update_xaxes(visible=False, range=[-0.5, line_width - 0.5])
    figure.update_yaxes(
        tickvals=list(range(len(rows))),
        ticktext=row_labels,
        autorange="reversed",
        showgrid=False,
        zeroline=False,
    )
    style(figure, title, height=TITLE_HEIGHT + ROW_HEIGHT * max(len(rows), 1) + LEGEND_HEIGHT)
    figure.update_layout(
        legend=dict(orientation="v", yref="container", y=0, yanchor="bottom", x=0),
        margin=dict(b=LEGEND_HEIGHT),
        plot_bgcolor="white",
    )
    return figure


def embedding_rows(
    vectors,
    token_labels: Sequence[str],
    first_token: int = 0,
    num_tokens: int = 32,
    num_dims: int = 64,
    title: str = "",
) -> go.Figure:
    """Rows `first_token …` of a (T, D) matrix of token vectors, their first `num_dims` columns, on a
    diverging scale centred on 0 (one colour range for the whole block, so rows can be compared).

    Unlike `common.heatmap`, which repeats both labels in every cell's hover data, the rows here are
    named by category (position and token, unique by their position) so 64 × 384 cells stay a small
    payload: the hover reads the row's name straight from the axis.
    """
    values = as_array(vectors)
    rows = slice(first_token, min(first_token + num_tokens, values.shape[0]))
    block = values[rows, :num_dims].astype(np.float32)  # 7 digits are plenty to look at and halve the bytes
    limit = float(np.abs(block).max()) if block.size else 1.0
    positions = range(values.shape[0])[rows]
    row_names = token_names([token_labels[position] for position in positions], positions)
    figure = go.Figure(
        go.Heatmap(
            z=block,
            x=list(range(block.shape[1])),
            y=row_names,
            colorscale=DIVERGING_SCALE,
            zmin=-limit,
            zmax=limit,
            hovertemplate="token %{y}<br>dimension %{x}<br>value = %{z:.4f}<extra></extra>",
            colorbar=dict(thickness=12),
        )
    )
    figure.update_xaxes(side="top", title="dimension", showgrid=False)
    figure.update_yaxes(type="category", autorange="reversed", title="token", showgrid=False)
    return style(figure, title, height=130 + 18 * len(row_names))


def _wrap(text: str, line_width: int) -> list[tuple[int, int]]:
    """(start, end) of each drawn line: a line ends after a newline or when it is `line_width` long."""
    lines, start = [], 0
    for offset, character in enumerate(text):
        if offset - start == line_width:
            lines.append((start, offset))
            start = offset
        if character == "\n":
            lines.append((start, offset + 1))
            start = offset + 1
    if start < len(text) or not lines:
        lines.append((start, len(text)))
    return lines


def _owner_of_each_character(length: int, sentence: int, spans: Sequence[tuple[int, int, int]]) -> list[int]:
    """For each character of one sentence, the index of the token covering it (-1: none)."""
    owners = [-1] * length
    for token, (token_sentence, start, end) in enumerate(spans):
        if token_sentence == sentence:
            for offset in range(start, min(end, length)):
                owners[offset] = token
    return owners


def _cell_code(token: int, kinds: Sequence[str]) -> int:
    """The colour code of a character owned by `token` (-1: owned by none): see CELL_KINDS."""
    if token < 0:
        return 0
    if kinds[token] == "unknown":
        return _FIRST_CODE["unknown"]
    return _FIRST_CODE[kinds[token]] + token % 2


def _visible(character: str) -> str:
    """What a character's cell draws: spaces, tabs and newlines made visible (the page's `·`, →, ⏎). Other
    characters that draw nothing in a text (controls, zero-width and bidi format characters) draw nothing
    here either: they are no spaces, and the cell's hover names them (`_named`)."""
    if character == "\n":
        return "⏎"
    if character == "\t":
        return "→"
    if character.isspace():
        return "·"
    if unicodedata.category(character)[0] == "C":
        return ""
    return character


def _named(character: str) -> str:
    """A character as the hover names it: U+200D for one that draws nothing or only on another."""
    if character.isspace():
        return _visible(character)
    if unicodedata.category(character) in ("Mn", "Me") or unicodedata.category(character)[0] == "C":
        return f"U+{ord(character):04X}"
    return character


_ZERO_WIDTH_JOINER = "\u200d"
_SKIN_TONES = range(0x1F3FB, 0x1F400)  # Fitzpatrick modifiers: 👍 + 🏽 is one hand


def _joins_the_one_before(text: str, offset: int) -> bool:
    """Whether text[offset] is drawn as part of the character before it, as a browser draws them: a zero-width
    joiner, whatever it joins (👩 + joiner + 👩 + joiner + 👧 is one family), a variation selector (❤ + U+FE0F
    is the emoji ❤️), a skin tone and a combining accent. Those characters share one cell's glyph, so an emoji
    is drawn whole (a simplified form of Unicode's grapheme clusters, UAX #29)."""
    character = text[offset]
    if character == _ZERO_WIDTH_JOINER or ord(character) in _SKIN_TONES:
        return True
    if unicodedata.category(character) in ("Mn", "Me"):  # combining marks; variation selectors are marks too
        return True
    return offset > 0 and text[offset - 1] == _ZERO_WIDTH_JOINER and unicodedata.category(character)[0] != "C"


def _stepped_colorscale(colors: Sequence[str]) -> list[tuple[float, str]]:
    """A colour scale that is flat over each integer code 0 … len(colors) - 1 (with zmin/zmax at ±0.5)."""
    scale = []
    for code, color in enumerate(colors):
        scale += [(code / len(colors), color), ((code + 1) / len(colors), color)]
    return scale
