"""The students of the load test (benchmarks/load_test.py): who they are, what they open, what they type,
and what counts as seeing someone else's results. Both kinds of student (websocket and browser) use these."""

from __future__ import annotations

from dataclasses import dataclass, field

VIEW_TIMEOUT_SECONDS = 120   # a view that has not finished (or painted) by then counts as an error

# One single-token word per student (none occurs anywhere in the app's own text) and one per round.
MARKERS = ("penguin kangaroo dolphin octopus squirrel rabbit tiger lion elephant zebra camel donkey turtle parrot "
           "eagle owl wolf bear moose beaver otter falcon panda lizard frog shark whale salmon spider beetle pigeon "
           "goose monkey gorilla leopard").split()
ROUNDS = "red blue green yellow purple orange black white brown pink".split()
VERBS = "watches follows chases ignores meets finds greets".split()


@dataclass(frozen=True)
class Lesson:
    path: str
    query: dict
    min_plots: int
    shows_tokens: bool   # its figures are labelled with the text's tokens


def lessons_for(layer: int, head: int) -> list[Lesson]:
    """The round of lessons one student works through, with that student's own choices."""
    return [
        Lesson("multihead", {"mh_layer": layer, "mh_head": head}, 1, True),
        Lesson("attention", {"att_source": "model", "att_layer": layer, "att_head": head}, 1, True),
        Lesson("causal", {"cm_layer": layer, "cm_head": head}, 2, True),
        Lesson("encoder", {"enc_tab": "Hidden states"}, 1, True),
        Lesson("tokenization", {}, 1, False),
        Lesson("multihead", {"mh_tab": "Switch a head off", "mh_layer": layer, "mh_ablate": head}, 1, True),
        Lesson("positional", {"pos_d": 32 + 2 * layer}, 1, False),
    ]



@dataclass
class View:
    session: int
    lesson: str
    how: str          # "link" (a page opened from a link) or "typed" (new text typed into the sidebar)
    seconds: float
    started: float    # seconds since the load began
    received_bytes: int = 0  # what the server sent for it (websocket students only)


@dataclass
class Tally:
    views: list[View] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    off_loopback: list[str] = field(default_factory=list)


def student_text(session: int, round_number: int) -> str:
    """A sentence of its own for each student and round; every few students write a longer text."""
    marker, colour = MARKERS[session % len(MARKERS)], ROUNDS[round_number % len(ROUNDS)]
    sentence = f"the {colour} {marker} {VERBS[session % len(VERBS)]} the river"
    return " and ".join([sentence] * (1 + session % 4))


def view_problems(session: int, round_number: int, text: str, box: str, words: set[str] | None) -> list[str]:
    """What is wrong with a view: `box` is the sidebar's text, `words` the words of the figures' labels
    (None for a lesson whose figures are not labelled with tokens)."""
    problems = [] if box == text else [f"sidebar holds {box[:60]!r}, not its own text"]
    if words is not None:
        own, colour = MARKERS[session % len(MARKERS)], ROUNDS[round_number % len(ROUNDS)]
        if own not in words or colour not in words:
            problems.append(f"its figures lack its own tokens {own!r}/{colour!r}")
        strangers = (words & set(MARKERS)) - {own}
        if strangers:
            problems.append(f"its figures show other students' tokens {sorted(strangers)}")
        stale = (words & set(ROUNDS)) - {colour}
        if stale:
            problems.append(f"its figures still show an earlier round {sorted(stale)}")
    return problems
