"""Reading matrices typed by a learner: numbers become a tensor, anything else becomes a named problem."""

import math

import pytest
import torch

from lessons.attention.matrix_input import (
    LARGEST_ENTRY,
    decode_matrices,
    encode_matrices,
    format_number,
    matrix_cells,
    parse_matrix,
    parse_number,
)
from lessons.common.examples import LOVE_MATHEMATICS_W_Q, LOVE_MATHEMATICS_X


def test_the_seed_matrices_survive_a_round_trip_through_text():
    cells = matrix_cells(LOVE_MATHEMATICS_X)
    assert cells[0] == ["0", "2", "0", "1"]  # integers are shown as a learner would type them
    parsed = parse_matrix("X", cells, (3, 4))
    assert parsed.ok and parsed.problems == ()
    assert parsed.values.dtype == torch.float64
    assert torch.equal(parsed.values, LOVE_MATHEMATICS_X)


@pytest.mark.parametrize(
    "text, value",
    [("5", 5.0), (" 3.5 ", 3.5), ("-2", -2.0), ("−2", -2.0), ("1e3", 1000.0), (".25", 0.25), (2, 2.0)],
)
def test_numbers_are_read_whatever_their_spelling(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize(
    "text, words",
    [
        ("abc", "“abc” is not a number"),
        ("", "empty"),
        ("   ", "empty"),
        (None, "empty"),
        (math.nan, "empty"),  # what a cleared cell of a numeric column holds
        ("nan", "“nan” is not a number"),
        ("1e999", "“1e999” is too large"),
        ("inf", "“inf” is too large"),
        ("-2e6", "“-2e6” is too large"),
    ],
)
def test_a_cell_that_is_no_usable_number_says_why(text, words):
    with pytest.raises(ValueError, match=words):
        parse_number(text)


def test_the_largest_allowed_entry_is_accepted_and_keeps_every_step_finite():
    assert parse_number(str(LARGEST_ENTRY)) == LARGEST_ENTRY
    # Four-wide rows of the largest entries: Q·Kᵀ = 4 · (4 · 1e6 · 1e6)² is still far from float64's limit.
    biggest = torch.full((3, 4), LARGEST_ENTRY, dtype=torch.float64)
    query = biggest @ torch.full((4, 4), LARGEST_ENTRY, dtype=torch.float64)
    assert torch.isfinite(query @ query.T).all()


def test_every_bad_cell_is_named_by_matrix_row_and_column_counted_from_zero_as_the_editor_shows_them():
    cells = matrix_cells(LOVE_MATHEMATICS_W_Q)
    cells[0][0], cells[1][2], cells[3][3] = "abc", "", "1e999"
    parsed = parse_matrix("W_Q", cells, (4, 4))
    assert not parsed.ok and parsed.values is None
    assert [problem.message for problem in parsed.problems] == [
        "W_Q, row 0, column 0: “abc” is not a number",
        "W_Q, row 1, column 2: the cell is empty; type a number",
        "W_Q, row 3, column 3: “1e999” is too large; keep entries between −1,000,000 and 1,000,000",
    ]
    assert [problem.text for problem in parsed.problems] == ["abc", "", "1e999"]  # kept for the learner


def test_a_long_bad_entry_is_shortened_in_the_message():
    parsed = parse_matrix("X", [["x" * 200]], (1, 1))
    assert parsed.problems[0].message == f"X, row 0, column 0: “{'x' * 20}…” is not a number"


def test_a_grid_of_the_wrong_shape_is_a_problem_not_an_exception():
    parsed = parse_matrix("X", [["1", "2"]], (3, 4))
    assert not parsed.ok
    assert parsed.problems[0].reason == "expected 3 × 4 entries, found 1 × 2"


def test_numbers_are_written_back_without_needless_decimals():
    assert [format_number(value) for value in (2.0, -3.0, 0.5, 1e-7)] == ["2", "-3", "0.5", "1e-07"]


def test_edited_matrices_travel_in_a_link_and_come_back_as_the_same_cells():
    starting = {"X": LOVE_MATHEMATICS_X, "W_Q": LOVE_MATHEMATICS_W_Q}
    edited_x = LOVE_MATHEMATICS_X.clone()
    edited_x[0, 0], edited_x[2, 3] = 5, -0.25
    text = encode_matrices({"X": edited_x, "W_Q": LOVE_MATHEMATICS_W_Q}, starting)
    assert text == "X:5,2,0,1;1,1,2,1;1,0,2,-0.25"  # only the matrix that changed
    assert decode_matrices(text, {"X": (3, 4), "W_Q": (4, 4)}) == {"X": matrix_cells(edited_x)}
    assert encode_matrices(starting, starting) == ""


@pytest.mark.parametrize(
    "text", ["X:1,2", "Y:1,2,3,4;1,2,3,4;1,2,3,4", "X:a,b,c,d;1,1,1,1;1,1,1,1", "X:1e999,0,0,0;0,0,0,0;0,0,0,0"]
)
def test_a_link_with_matrices_of_the_wrong_shape_name_or_numbers_is_refused(text):
    with pytest.raises(ValueError):
        decode_matrices(text, {"X": (3, 4)})
