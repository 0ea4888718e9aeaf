"""Reading matrices that a learner typed, cell by cell, without ever failing on what they typed.

A page lets the learner edit every entry of X, W_Q, W_K and W_V. Each cell arrives as text (or None when
cleared). `parse_matrix` turns a grid of such cells into a float64 tensor, or into a list of problems
that name the matrix, the row and the column of each bad cell, so the page can say exactly what to fix
while keeping the learner's edits on screen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

# Entries larger than this could overflow float64 once multiplied through Q·Kᵀ (four products deep),
# which would turn the softmax into NaN. A million leaves every step of a 4-wide example finite.
LARGEST_ENTRY = 1e6

# Minus signs as they appear when numbers are copied from typeset notes or a word processor.
_MINUS_SIGNS = str.maketrans({"−": "-", "–": "-", "‒": "-"})


@dataclass(frozen=True)
class CellProblem:
    """One cell that is not a usable number, and why."""

    matrix: str  # the matrix's name as the page shows it, e.g. "W_Q"
    row: int  # 0-based
    column: int  # 0-based
    text: str  # what the cell held
    reason: str

    @property
    def message(self) -> str:
        """The problem in words, rows and columns counted from 0 as everywhere in the app (and in the editor)."""
        return f"{self.matrix}, row {self.row}, column {self.column}: {self.reason}"


@dataclass(frozen=True)
class ParsedMatrix:
    """The result of reading one grid: the values when every cell is a number, the problems otherwise."""

    name: str
    values: Tensor | None  # (rows, columns) float64, None when any cell is bad
    problems: tuple[CellProblem, ...]

    @property
    def ok(self) -> bool:
        return self.values is not None


def parse_number(text: object) -> float:
    """One cell as a finite float in [−LARGEST_ENTRY, LARGEST_ENTRY]; ValueError says what is wrong."""
    if text is None or (isinstance(text, float) and math.isnan(text)) or not str(text).strip():
        raise ValueError("the cell is empty; type a number")
    cleaned = str(text).strip().translate(_MINUS_SIGNS)
    try:
        value = float(cleaned)
    except ValueError:
        raise ValueError(f"{_quoted(text)} is not a number") from None
    if math.isnan(value):
        raise ValueError(f"{_quoted(text)} is not a number (NaN cannot be attended over)")
    if not abs(value) <= LARGEST_ENTRY:
        raise ValueError(
            f"{_quoted(text)} is too large; keep entries between −{LARGEST_ENTRY:,.0f} and {LARGEST_ENTRY:,.0f}"
        )
    return value


def parse_matrix(name: str, cells: Sequence[Sequence[object]], shape: tuple[int, int]) -> ParsedMatrix:
    """Read a grid of cells (text, numbers or None) into a (rows, columns) float64 tensor."""
    rows, columns = shape
    if len(cells) != rows or any(len(row) != columns for row in cells):
        found = f"{len(cells)} × {len(cells[0]) if len(cells) else 0}"
        problem = CellProblem(name, 0, 0, "", f"expected {rows} × {columns} entries, found {found}")
        return ParsedMatrix(name, None, (problem,))
    values = [[0.0] * columns for _ in range(rows)]
    problems = []
    for row in range(rows):
        for column in range(columns):
            try:
                values[row][column] = parse_number(cells[row][column])
            except ValueError as error:
                problems.append(CellProblem(name, row, column, _as_text(cells[row][column]), str(error)))
    if problems:
        return ParsedMatrix(name, None, tuple(problems))
    return ParsedMatrix(name, torch.tensor(values, dtype=torch.float64), ())


def matrix_cells(matrix: Tensor) -> list[list[str]]:
    """A tensor as the text a learner would type: 2 rather than 2.0, 0.5 as 0.5."""
    return [[format_number(float(value)) for value in row] for row in matrix.tolist()]


def format_number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _as_text(cell: object) -> str:
    return "" if cell is None else str(cell)


def _quoted(cell: object) -> str:
    text = _as_text(cell).strip()
    return f"“{text[:20]}…”" if len(text) > 20 else f"“{text}”"


# ---------------------------------------------------------------------------------------------------------
# Matrices in a link: "X:0,2,0,1;1,1,2,1;1,0,2,0|W_Q:..." (only the ones that differ from their starting values)

MATRIX_SEPARATOR, NAME_SEPARATOR, ROW_SEPARATOR, ENTRY_SEPARATOR = "|", ":", ";", ","


def encode_matrices(matrices: dict[str, Tensor], starting: dict[str, Tensor]) -> str:
    """The matrices that differ from their starting values, as link text ("" when none does)."""
    parts = []
    for name, values in matrices.items():
        if not torch.equal(values, starting[name]):
            rows = ROW_SEPARATOR.join(
                ENTRY_SEPARATOR.join(format_number(float(v)) for v in row) for row in values.tolist()
            )
            parts.append(f"{name}{NAME_SEPARATOR}{rows}")
    return MATRIX_SEPARATOR.join(parts)


def decode_matrices(text: str, shapes: dict[str, tuple[int, int]]) -> dict[str, list[list[str]]]:
    """Link text back into the cells of each matrix it names; ValueError when it is not what
    `encode_matrices` writes for these shapes, or holds a number the editor would refuse."""
    cells: dict[str, list[list[str]]] = {}
    for part in filter(None, text.split(MATRIX_SEPARATOR)):
        name, _, rows_text = part.partition(NAME_SEPARATOR)
        if name not in shapes or name in cells:
            raise ValueError(f"no matrix {name!r} to set here")
        rows = [row.split(ENTRY_SEPARATOR) for row in rows_text.split(ROW_SEPARATOR)]
        parsed = parse_matrix(name, rows, shapes[name])
        if parsed.values is None:
            raise ValueError(parsed.problems[0].message)
        cells[name] = matrix_cells(parsed.values)
    return cells
