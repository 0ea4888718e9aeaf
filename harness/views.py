"""The pages under test: where each lives, what it is called, how many charts its default view draws, and
how to read tokens back out of those charts."""

from __future__ import annotations

from dataclasses import dataclass, field

from lessons.common.ui import frame

DEFAULT_TOKENS = ["[CLS]", "time", "flies", "like", "an", "arrow", "[SEP]"]  # the sidebar's default text


@dataclass(frozen=True)
class Lesson:
    path: str  # URL path ("" is the welcome page)
    title: str  # its h1
    charts: int  # plotly charts on the default view
    query: dict = field(default_factory=dict)  # what the page needs to study the sidebar's text
    shows_tokens: bool = True  # its charts label rows or columns with the text's tokens
    follows_text: bool = True  # its charts are redrawn when the sidebar's text changes


# Each page as a link opens it. Pages with tabs run only the open tab, so their charts are those of the first
# tab; the causal page's link names the tab that studies the sidebar's text (its first tab is a fixed example).
# What each page draws is known only here; which pages there are, and their order, is the app's table of
# contents (`frame.LESSONS`, below): a lesson added there and not here fails as soon as this module is imported.
_PAGES = {
    "home": Lesson("", "Transformer anatomy", 0, shows_tokens=False),
    # The tokenization page opens on the text's characters, coloured by token (the tokens are in its table).
    "tokenization": Lesson("tokenization", "Tokenization", 1, shows_tokens=False),
    "positional": Lesson("positional", "Positional encodings", 1, shows_tokens=False),
    "attention": Lesson("attention", "Scaled dot-product attention, step by step", 2, {"att_source": "model"}),
    "multihead": Lesson("multihead", "Multi-head comparison", 1),
    "causal": Lesson("causal", "Causal masking", 2, {"cm_tab": "One head on your text"}),
    "encoder": Lesson("encoder", "Encoder stack", 2),
    # The models trained here read words typed into the page itself, not the sidebar's text.
    "decoder": Lesson("decoder", "Decoder & cross-attention", 3, shows_tokens=False, follows_text=False),
    "training": Lesson("training", "Train it yourself", 0, shows_tokens=False, follows_text=False),
    # SmolLM2 opens on its next-token guesses: the candidates' bars, not the text's tokens (those are in a table).
    "language_model": Lesson("language_model", "A real language model: SmolLM2", 1, shows_tokens=False),
}
LESSONS = {lesson.name: _PAGES[lesson.name] for lesson in frame.LESSONS}


def _tab(page: str, parameter: str, label: str, charts: int, follows_text: bool) -> tuple[str, Lesson]:
    lesson = LESSONS[page]
    return f"{page}/{label}", Lesson(
        lesson.path, lesson.title, charts, {parameter: label}, shows_tokens=False, follows_text=follows_text
    )


# Every other tab of every page, named "page/tab": with LESSONS, every view a link can open.
OTHER_TABS = dict(
    [
        _tab("tokenization", "tok_tab", "Tokens → vectors", 1, True),
        _tab("tokenization", "tok_tab", "Three tokenizers", 0, False),
        _tab("positional", "pos_tab", "The whole table", 2, False),
        _tab("positional", "pos_tab", "Similarity between positions", 4, False),
        _tab("positional", "pos_tab", "Bounded, unique, deterministic", 0, False),
        _tab("positional", "pos_tab", "Rotary positions", 3, True),
        _tab("multihead", "mh_tab", "Head view", 1, True),
        _tab("multihead", "mh_tab", "Two sentences", 3, False),
        _tab("multihead", "mh_tab", "Head statistics", 1, True),
        _tab("multihead", "mh_tab", "Split and recombine", 2, True),
        _tab("multihead", "mh_tab", "Switch a head off", 2, True),
        _tab("causal", "cm_tab", "A worked example", 1, False),
        _tab("causal", "cm_tab", "No mask, padding, causal", 1, True),
        _tab("causal", "cm_tab", "A trained decoder", 3, False),
        _tab("encoder", "enc_tab", "Hidden states", 2, True),
        _tab("encoder", "enc_tab", "A word in context", 1, False),
        _tab("encoder", "enc_tab", "Pre-LN vs post-LN", 2, False),
        _tab("encoder", "enc_tab", "Feed-forward", 2, True),
        _tab("encoder", "enc_tab", "Classification head", 2, False),
        # The embedded MiniLM has no masked-LM head: the tab says which checkpoints would fill the mask.
        _tab("encoder", "enc_tab", "Fill the mask", 0, False),
        _tab("encoder", "enc_tab", "Parameters", 0, False),
        _tab("decoder", "dec_tab", "Writing the answer", 1, False),
        _tab("decoder", "dec_tab", "Three families", 1, False),
        _tab("language_model", "lm_tab", "Writing", 1, True),
        _tab("language_model", "lm_tab", "Attention", 1, True),
        _tab("language_model", "lm_tab", "Chat template", 0, False),
        _tab("language_model", "lm_tab", "Attention sinks", 2, True),
        _tab("language_model", "lm_tab", "Induction heads", 1, False),
        _tab("language_model", "lm_tab", "Logit lens", 1, True),
    ]
)
VIEWS = {**LESSONS, **OTHER_TABS}


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
