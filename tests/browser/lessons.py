"""The pages under test: where each lives, what it is called, how many charts its default view draws, and
how to read tokens back out of those charts."""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_TOKENS = ["[CLS]", "time", "flies", "like", "an", "arrow", "[SEP]"]  # the sidebar's default text


@dataclass(frozen=True)
class Lesson:
    path: str                      # URL path ("" is the welcome page)
    title: str                     # its h1
    charts: int                    # plotly charts on the default view
    query: dict = field(default_factory=dict)  # what the page needs to study the sidebar's text
    shows_tokens: bool = True      # its charts label rows or columns with the text's tokens
    follows_text: bool = True      # its charts are redrawn when the sidebar's text changes


LESSONS = {
    "home": Lesson("", "Transformer anatomy", 0, shows_tokens=False),
    "tokenization": Lesson("tokenization", "Tokenization", 2),
    "positional": Lesson("positional", "Positional encodings", 7, shows_tokens=False),
    "attention": Lesson("attention", "Scaled dot-product attention, step by step", 2, {"att_source": "model"}),
    "multihead": Lesson("multihead", "Multi-head comparison", 1),
    "causal": Lesson("causal", "Causal masking", 7),  # 4 on the sidebar's text, 3 of the trained sorter
    "encoder": Lesson("encoder", "Encoder stack", 2),
    # The models trained here read words typed into the page itself, not the sidebar's text.
    "decoder": Lesson("decoder", "Decoder & cross-attention", 5, shows_tokens=False, follows_text=False),
    "training": Lesson("training", "Train it yourself", 0, shows_tokens=False, follows_text=False),
}


def labels_of(figures: list[dict]) -> set[str]:
    """Every axis or cell label the charts carry (numbers are left out)."""
    found = set()
    for figure in figures:
        for trace in figure["traces"]:
            for axis in ("x", "y", "text"):
                values = trace[axis]
                if isinstance(values, dict) and values["labels"]:
                    found.update(values["labels"])
    return found


def mentions(labels: set[str], word: str) -> bool:
    return any(word in label for label in labels)
