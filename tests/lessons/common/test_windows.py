import pytest
import torch

from lessons.common.windows import FOCUS_WINDOW, centred_window, crop, focus_window


@pytest.mark.parametrize(
    "length, start, expected",
    [
        (100, 0, range(FOCUS_WINDOW)),
        (100, 30, range(30, 30 + FOCUS_WINDOW)),
        (200, 190, range(152, 200)),  # slides back so that it is still 48 long
        (100, -5, range(FOCUS_WINDOW)),
        (10, 5, range(10)),  # a short text is shown whole
    ],
)
def test_the_focus_window_shows_48_tokens_and_stays_inside_the_text(length, start, expected):
    assert FOCUS_WINDOW == 48
    assert focus_window(length, start) == expected


def test_a_centred_window_centres_on_the_token_and_stays_inside_the_text():
    assert centred_window(100, 50, 48) == range(26, 74)
    assert centred_window(100, 3, 48) == range(48)
    assert centred_window(100, 98, 48) == range(52, 100)
    assert centred_window(10, 5, 48) == range(10)


def test_crop_picks_rows_and_columns_and_keeps_minus_infinity():
    matrix = torch.tensor([[0.0, float("-inf"), 2.0], [3.0, 4.0, float("-inf")], [6.0, 7.0, 8.0]])
    assert crop(matrix, [0, 2], [1, 2]).tolist() == [[float("-inf"), 2.0], [7.0, 8.0]]
