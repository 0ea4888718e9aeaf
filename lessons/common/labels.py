"""How the app names a token among others, wherever it shows one: on a chart's axis, in a table's rows and
columns, in a select box, in an exercise's options.

"3: flies" — the token's position, counted from 0 as everywhere in the app, then the token as the tokenizer
wrote it (whitespace markers such as "Ġ", "▁" or "##" left as they are). The position keeps a repeated word
apart ("2: the" and "5: the" are two rows, not one), and the colon keeps it apart from a token that is itself a
number ("3: 1996").

The names are plain text: a figure escapes them for plotly (`matrix_figures.token_names`, `plots.safe_label`),
and Streamlit shows a select box's options and a table's labels literally.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def token_label(position: int, token: str) -> str:
    """One token named by its position: "3: flies"."""
    return f"{position}: {token}"


def token_labels(tokens: Iterable[str], positions: Sequence[int] | None = None) -> list[str]:
    """Each token named by its position: the i-th of `positions` (by default 0, 1, 2, …, as for a whole text;
    a window of a long text passes its own positions, so each token keeps the number it has in the text)."""
    tokens = list(tokens)
    positions = range(len(tokens)) if positions is None else positions
    return [token_label(position, token) for position, token in zip(positions, tokens, strict=False)]
