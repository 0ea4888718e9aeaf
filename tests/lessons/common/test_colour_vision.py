"""The colour-vision check (lessons.common.colour_vision) and the app's colours held to it."""

from __future__ import annotations

import numpy as np
import plotly.colors
import pytest

from lessons.common.colour_vision import SIMULATIONS, VISIONS, lightness_steps, seen_as, smallest_difference, to_lab
from lessons.common.plots import ATTENTION_SCALE, HEAD_COLOURS
from scripts.colour_vision import CLEARLY_DIFFERENT, scale_colours


def test_cielab_of_white_and_of_pure_red_are_the_textbook_values():
    white, red = to_lab(np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]))
    assert white == pytest.approx([100.0, 0.0, 0.0], abs=0.01)
    assert red == pytest.approx([53.24, 80.09, 67.20], abs=0.05)


@pytest.mark.parametrize("vision", list(SIMULATIONS))
def test_a_grey_looks_the_same_to_every_reader(vision):
    greys = np.array([[0.2, 0.2, 0.2], [0.5, 0.5, 0.5], [0.9, 0.9, 0.9]])
    assert seen_as(greys, vision) == pytest.approx(greys, abs=0.01)


def test_red_and_green_that_differ_plainly_become_alike_without_red_or_green_cones():
    typical, _ = smallest_difference(["#d62728", "#2ca02c"], "typical")
    for vision in ("protanopia", "deuteranopia"):
        deficient, _ = smallest_difference(["#d62728", "#2ca02c"], vision)
        assert deficient < typical / 2


@pytest.mark.parametrize("vision", VISIONS)
def test_any_two_of_the_first_twelve_head_colours_stay_clearly_different(vision):
    difference, pair = smallest_difference(list(HEAD_COLOURS[:12]), vision)
    assert difference >= CLEARLY_DIFFERENT, f"heads {pair} look alike under {vision}"


def test_plotlys_dark24_which_the_head_view_used_before_fails_the_same_check():
    difference, _ = smallest_difference(list(plotly.colors.qualitative.Dark24[:12]), "deuteranopia")
    assert difference < 2  # two heads drew in what a deuteranope sees as one colour


@pytest.mark.parametrize("vision", VISIONS)
def test_attention_weights_darken_from_zero_to_one_for_every_reader(vision):
    lightness = lightness_steps(scale_colours(ATTENTION_SCALE), vision)
    assert np.all(np.diff(lightness) < 0)
