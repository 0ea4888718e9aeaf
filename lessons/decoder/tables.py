"""The decoder lesson's tables: the reverser's generation step by step, and the three families' members.

Plain pandas frames whose column names are what the page shows (its tests find the tables by them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import pandas as pd

from lessons.common.labels import token_label
from lessons.decoder.families import ModelRow
from lessons.decoder.reversal import ReversalLesson

PROBABILITY_COLUMNS = ("probability", "runner-up probability")
PARAMETERS_COLUMN = "parameters (from the config)"
FAMILY_COLUMNS = {  # ModelRow field -> column shown
    "name": "model",
    "encoder_layers": "encoder blocks",
    "decoder_layers": "decoder blocks",
    "width": "width D",
    "num_heads": "heads",
    "ff_width": "FF width",
    "vocab_size": "vocabulary",
    "parameters": PARAMETERS_COLUMN,
}


def step_labels(lesson: ReversalLesson) -> list[str]:
    """Each generation step as "last input → written", e.g. "<bos> → r": the rows of its figures."""
    return [f"{step.inputs[-1]} → {step.token}" for step in lesson.steps]


def steps_table(lesson: ReversalLesson) -> pd.DataFrame:
    """One row per generation step: what the decoder had, what it wrote, how sure it was, and which source
    letter each head read most against the mirrored one it had to copy."""
    source, mirrored = lesson.source_tokens, lesson.mirrored_positions.tolist()
    rows = []
    for step in lesson.steps:
        row = {
            "step": step.index,
            "decoder input": " ".join(step.inputs),
            "writes": step.token,
            "probability": step.probability,
            "runner-up": step.runner_up,
            "runner-up probability": step.runner_up_probability,
        }
        for head, position in enumerate(step.most_read):
            row[f"head {head} reads most"] = token_label(position, source[position])
        row["mirrored position S−1−t"] = (
            token_label(mirrored[step.index], source[mirrored[step.index]])
            if step.index < len(mirrored)
            else "— (no letter left)"
        )
        rows.append(row)
    return pd.DataFrame(rows)


def family_table(rows: Sequence[ModelRow]) -> pd.DataFrame:
    """The models of the three families, one row each, under the column names the page shows."""
    return pd.DataFrame(map(asdict, rows)).rename(columns=FAMILY_COLUMNS)
