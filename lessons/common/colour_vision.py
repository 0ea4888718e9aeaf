"""How the app's colours look to readers with a colour-vision deficiency, and whether they stay apart.

Each colour is converted to linear RGB, passed through the simulation matrices of Machado, Oliveira and
Fernandes, "A Physiologically-based Model for Simulation of Color Vision Deficiency" (IEEE TVCG 2009), at
full severity, for protanopia (no red cones), deuteranopia (no green cones) and tritanopia (no blue cones),
and compared in CIELAB: ΔE*ab (CIE 1976) is the distance between two colours there, where about 2 is just
noticeable and 10 or more reads as clearly different. `scripts/colour_vision.py` prints the check for every
colour scale of the app; tests hold the scales to it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Rows map linear (R, G, B) to the simulated (R, G, B); Machado et al. 2009, table for severity 1.0.
SIMULATIONS = {
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "tritanopia": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]
    ),
}
VISIONS = ("typical", *SIMULATIONS)
# sRGB (D65) to CIE XYZ, and the D65 white point
_RGB_TO_XYZ = np.array(
    [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
)
_WHITE = np.array([0.95047, 1.0, 1.08883])


def parse_colour(colour: str) -> np.ndarray:
    """'#6a51a3' or 'rgb(106,81,163)' as sRGB values in [0, 1]."""
    text = colour.strip().lower()
    if text.startswith("#"):
        return np.array([int(text[index : index + 2], 16) for index in (1, 3, 5)]) / 255.0
    if text.startswith("rgb"):
        inside = text[text.index("(") + 1 : text.index(")")]
        return np.array([float(part) for part in inside.split(",")[:3]]) / 255.0
    raise ValueError(f"not a colour plotly writes: {colour!r}")


def to_linear(srgb: np.ndarray) -> np.ndarray:
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def to_srgb(linear: np.ndarray) -> np.ndarray:
    linear = np.clip(linear, 0.0, 1.0)
    return np.where(linear <= 0.0031308, linear * 12.92, 1.055 * linear ** (1 / 2.4) - 0.055)


def seen_as(srgb: np.ndarray, vision: str) -> np.ndarray:
    """The sRGB colours (…, 3) as a reader with `vision` sees them (as typical vision would name them)."""
    if vision == "typical":
        return srgb
    return to_srgb(to_linear(srgb) @ SIMULATIONS[vision].T)


def to_lab(srgb: np.ndarray) -> np.ndarray:
    xyz = to_linear(srgb) @ _RGB_TO_XYZ.T / _WHITE
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def smallest_difference(colours: Sequence[str], vision: str) -> tuple[float, tuple[int, int]]:
    """The smallest ΔE*ab between any two of `colours` as `vision` sees them, and which two."""
    lab = to_lab(seen_as(np.array([parse_colour(colour) for colour in colours]), vision))
    distances = np.linalg.norm(lab[:, None, :] - lab[None, :, :], axis=-1)
    distances[np.diag_indices(len(colours))] = np.inf
    first, second = np.unravel_index(np.argmin(distances), distances.shape)
    return float(distances[first, second]), (int(first), int(second))


def lightness_steps(colours: Sequence[str], vision: str) -> np.ndarray:
    """L* of each colour of a scale, in order, as `vision` sees it: a sequential scale should run one way."""
    return to_lab(seen_as(np.array([parse_colour(colour) for colour in colours]), vision))[:, 0]
