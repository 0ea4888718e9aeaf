"""The labels and tables the encoder lesson shows, built from what `lessons.encoder.analysis` measured.

Pandas and torch only: the lesson's UI (`lessons.encoder.ui`) lays these out and adds no arithmetic of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise
from typing import Literal

import pandas as pd
from torch import Tensor

from lessons.common.runs import EncoderRun
from lessons.encoder.analysis import (
    ClassifierHeadOutput,
    NormGrowth,
    ParameterRow,
    WordLocation,
    ZooEntry,
    in_millions,
    similarity_to_embeddings,
    similarity_to_previous_layer,
)
from lessons.encoder.fill_mask import FilledText, context_of

# ---------------------------------------------------------------------------------------------------------
# Depths and the vectors compared across them


def depth_labels(num_layers: int) -> list[str]:
    """The L + 1 hidden states, each named for the layer that produced it (layers counted from 0, as in
    `trace.layers[0]` and the checkpoint's `encoder.layer.0`)."""
    return ["embeddings"] + [f"after layer {layer}" for layer in range(num_layers)]


Comparison = Literal["previous", "embeddings"]  # what each depth's vectors are compared with


def self_similarity(
    hidden_states: Sequence[Tensor], depths: Sequence[str], against: Comparison
) -> tuple[Tensor, list[str]]:
    """(rows, T) each token's cosine with itself at another depth, and the names of the rows."""
    if against == "previous":
        rows = [f"{above} vs {below}" for below, above in pairwise(depths)]
        return similarity_to_previous_layer(hidden_states), rows
    return similarity_to_embeddings(hidden_states), [f"{label} vs embeddings" for label in depths]


def block_sizes(blocks: Sequence[tuple[int, int]]) -> list[int]:
    """The distinct numbers of tokens in the blocks [start, end) of a pooled map, smallest first."""
    return sorted({end - start for start, end in blocks})


# ---------------------------------------------------------------------------------------------------------
# One word in two contexts


@dataclass(frozen=True)
class FoundWord:
    """Where the followed word sits in one of the two sentences."""

    sentence: str  # its name, "A" or "B"
    tokens: Sequence[str]  # the sentence's tokens
    location: WordLocation


def word_pieces_table(found: Sequence[FoundWord]) -> pd.DataFrame:
    """One row per sentence: the word pieces compared, their positions, how often the word occurs."""
    return pd.DataFrame(
        [
            {
                "sentence": word.sentence,
                "word pieces used": " ".join(word.tokens[index] for index in word.location.token_indices),
                "positions": ", ".join(map(str, word.location.token_indices)),
                "occurrences": word.location.occurrences,
            }
            for word in found
        ]
    )


def similarity_by_depth(similarity: Tensor, depths: Sequence[str]) -> pd.DataFrame:
    """(L + 1) cosines, one row per depth."""
    return pd.DataFrame({"cosine similarity": similarity.numpy()}, index=pd.Index(depths, name="depth"))


# ---------------------------------------------------------------------------------------------------------
# Where the layer norm sits


def unit_norm(width: int) -> float:
    """The length of a LayerNorm's output before γ and β: mean 0 and variance 1 over D numbers make it √D."""
    return width**0.5


@dataclass(frozen=True)
class GrowthSummary:
    """The untrained demonstration in a few numbers: the mean ‖h‖ over tokens at the input and after each block."""

    pre_means: Tensor  # (blocks + 1,) pre-LN
    post_means: Tensor  # (blocks + 1,) post-LN

    @property
    def pre_start(self) -> float:
        return float(self.pre_means[0])

    @property
    def pre_end(self) -> float:
        return float(self.pre_means[-1])

    @property
    def pre_ratio(self) -> float:
        """How many times longer the pre-LN vectors are after the last block than at the input."""
        return float(self.pre_means[-1] / self.pre_means[0])

    @property
    def post_range(self) -> tuple[float, float]:
        """The lowest and highest post-LN mean after a block (the input is left out)."""
        return float(self.post_means[1:].min()), float(self.post_means[1:].max())

    def table(self) -> pd.DataFrame:
        """Both means, one row for the input and one after each block."""
        depths = ["input"] + [f"after block {index}" for index in range(len(self.pre_means) - 1)]
        return pd.DataFrame(
            {"pre-LN mean ‖h‖": self.pre_means.numpy(), "post-LN mean ‖h‖": self.post_means.numpy()}, index=depths
        )


def growth_summary(growth: dict[str, NormGrowth]) -> GrowthSummary:
    """`growth` holds one NormGrowth per placement, "pre" and "post"."""
    return GrowthSummary(growth["pre"].norms.mean(dim=1).cpu(), growth["post"].norms.mean(dim=1).cpu())


# ---------------------------------------------------------------------------------------------------------
# The classification head and the parameters


def classifier_table(head: ClassifierHeadOutput) -> pd.DataFrame:
    """One row per label: its logit and its probability."""
    return pd.DataFrame(
        {
            "label": range(len(head.logits)),
            "logit": head.logits.cpu().numpy(),
            "probability": head.probabilities.cpu().numpy(),
        }
    )


def parameter_frame(rows: Sequence[ParameterRow], total: int) -> pd.DataFrame:
    """Each component's count from the configuration and in the loaded model, a total row, and each row's
    share of `total`, the loaded model's Σ p.numel()."""
    frame = pd.DataFrame(map(asdict, rows)).set_index("component")
    frame.columns = ["from the configuration", "in the loaded model"]
    frame.loc["total"] = frame.sum()
    frame["share of the loaded model"] = (frame["in the loaded model"] / total).map("{:.1%}".format)
    return frame.reset_index()


def mismatched_components(rows: Sequence[ParameterRow]) -> list[str]:
    """The components whose loaded count differs from what the configuration predicts."""
    return [row.component for row in rows if row.from_config != row.in_model]


def zoo_frame(zoo: Sequence[ZooEntry]) -> pd.DataFrame:
    """The presets' shape numbers and the parameter count they imply, in millions too."""
    frame = pd.DataFrame(map(asdict, zoo)).rename(
        columns={
            "name": "model",
            "num_layers": "layers",
            "width": "width D",
            "num_heads": "heads",
            "ff_width": "FF width",
        }
    )
    frame["≈"] = frame["parameters"].map(in_millions)
    return frame


# ---------------------------------------------------------------------------------------------------------
# Filling [MASK]


def fill_mask_frame(filled: FilledText, run: EncoderRun) -> pd.DataFrame:
    """One row per mask and candidate word: which mask, the rank, the word, its probability and the tokens
    around the mask (user text lands only in the dataframe, which never renders markdown)."""
    rows = [
        {
            "mask": number,
            "rank": rank,
            "token": token,
            "probability": round(probability, 4),
            "around it": context_of(run, fill.position),
        }
        for number, fill in enumerate(filled.fills, start=1)
        for rank, (token, probability) in enumerate(zip(fill.tokens, fill.probabilities), start=1)
    ]
    # The words and their probabilities first: on a phone the last columns are off the screen's edge.
    return pd.DataFrame(rows, columns=["mask", "rank", "token", "probability", "around it"])
