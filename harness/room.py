"""The students of the load test (benchmarks/load_test.py): who they are, what they open, what they type,
and what counts as seeing someone else's results. Both kinds of student (websocket and browser) use these."""

from __future__ import annotations

from dataclasses import dataclass, field

VIEW_TIMEOUT_SECONDS = 120  # a view that has not finished (or painted) by then counts as an error
TRAINING_BUDGET_SECONDS = 3  # ANATOMY_TRAINING_BUDGET_SECONDS of the load test's server: short runs, many turns
# Error messages that are part of a lesson: the cheater, trained without the mask, writes wrong answers on
# purpose, and the causal page shows each as an error; a wrong answer to an exercise is shown as one too.
LESSON_ERRORS = ("The cheater wrote", "You answered")

# One single-token word per student (none occurs anywhere in the app's own text) and one per round.
MARKERS = (
    "penguin kangaroo dolphin octopus squirrel rabbit tiger lion elephant zebra camel donkey turtle parrot "
    "eagle owl wolf bear moose beaver otter falcon panda lizard frog shark whale salmon spider beetle pigeon "
    "goose monkey gorilla leopard"
).split()
ROUNDS = "red blue green yellow purple orange black white brown pink".split()
VERBS = "watches follows chases ignores meets finds greets".split()


@dataclass(frozen=True)
class Lesson:
    path: str
    query: dict
    min_plots: int
    shows_tokens: bool  # its figures are labelled with the text's tokens
    answer: str | None = None  # a word lesson: what the trained model must be shown writing for the word


def lessons_for(layer: int, head: int, word: str | None = None) -> list[Lesson]:
    """The round of lessons one student works through, with that student's own choices. With a `word`, the
    models trained here work on it too: the sorter on the causal page (every other student with the
    cheater beside it), and the reverser on the decoder page.

    A deliberate selection, not `frame.LESSONS`: the views of a load test's round, in its order, one page
    twice (two of its tabs); the welcome page and SmolLM2's page are not in it, and the training page has a
    round of its own (`training_lesson`)."""
    sorter = {} if word is None else {"cm_word": word, "cm_cheater": str(layer % 2 == 1).lower()}
    lessons = [
        Lesson("multihead", {"mh_layer": layer, "mh_head": head}, 1, True),
        Lesson("attention", {"att_source": "model", "att_layer": layer, "att_head": head}, 1, True),
        Lesson("causal", {"cm_tab": "One head on your text", "cm_layer": layer, "cm_head": head}, 2, True),
        Lesson("encoder", {"enc_tab": "Hidden states"}, 1, True),
        Lesson("tokenization", {}, 1, False),
        Lesson("multihead", {"mh_tab": "Switch a head off", "mh_layer": layer, "mh_ablate": head}, 1, True),
        Lesson("positional", {"pos_d": 32 + 2 * layer}, 1, False),
    ]
    if word is not None:
        lessons.insert(3, Lesson("causal", {"cm_tab": "A trained decoder", **sorter}, 3, False, "".join(sorted(word))))
        lessons.insert(5, Lesson("decoder", {"dec_tab": "Writing the answer", "dec_word": word}, 1, False, word[::-1]))
    return lessons


# What a trainer asks for: a model, a few steps (the last is far more than the load test's budget of a few
# seconds allows, so that some runs finish and some are stopped by the budget), a learning rate.
TRAINING_MODELS = ("sorter", "reverser", "sorter-cheater")
TRAINING_STEPS = (30, 60, 2000)
TRAINING_RATES = ("0.003", "0.01", "0.001")


def training_lesson(session: int, round_number: int) -> Lesson:
    """The training page with a trainer's own choices for this round; the example word is its marker."""
    return Lesson(
        "training",
        {
            "tr_model": TRAINING_MODELS[(session + round_number) % len(TRAINING_MODELS)],
            "tr_steps": TRAINING_STEPS[round_number % len(TRAINING_STEPS)],
            "tr_lr": TRAINING_RATES[(session // 5 + 2 * round_number) % len(TRAINING_RATES)],
            "tr_seed": session * 100 + round_number,
            "tr_word": student_word(session),
        },
        0,
        False,
    )


def trainer_sessions(sessions: int, trainers: int) -> set[int]:
    """Which students train: `trainers` of them, spread evenly (every fifth of 40 for 8)."""
    trainers = max(0, min(trainers, sessions))
    return {index * sessions // trainers for index in range(trainers)}


@dataclass
class View:
    session: int
    lesson: str
    how: str  # "link" (a page opened from a link) or "typed" (new text typed into the sidebar)
    seconds: float
    started: float  # seconds since the load began
    received_bytes: int = 0  # what the server sent for it (websocket students only)
    replica: str = ""  # behind the lecture hall's nginx: the replica that served it (websocket students only)


@dataclass
class Tally:
    views: list[View] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    off_loopback: list[str] = field(default_factory=list)
    trainings: list[tuple[int, str, bool]] = field(default_factory=list)  # (session, outcome, waited first)
    killed: set[str] = field(default_factory=set)  # replicas killed during the class: their students move on


def student_text(session: int, round_number: int) -> str:
    """A sentence of its own for each student and round; every few students write a longer text."""
    marker, colour = MARKERS[session % len(MARKERS)], ROUNDS[round_number % len(ROUNDS)]
    sentence = f"the {colour} {marker} {VERBS[session % len(VERBS)]} the river"
    return " and ".join([sentence] * (1 + session % 4))


def student_word(session: int) -> str:
    """The word a student gives the trained models: its marker (every marker has 3 to 8 letters a-z)."""
    return MARKERS[session % len(MARKERS)]


def view_problems(
    session: int,
    round_number: int,
    text: str,
    box: str,
    words: set[str] | None,
    figures_held_back: bool = False,
) -> list[str]:
    """What is wrong with a view: `box` is the sidebar's text, `words` the words of the figures' labels
    (None for a lesson whose figures are not labelled with tokens). `figures_held_back`: an exercise on the
    page waits for an answer, and the lesson holds its figures back until then (check yourself), so none of
    the student's tokens are due; no one else's may show either."""
    problems = [] if box == text else [f"sidebar holds {box[:60]!r}, not its own text"]
    if words is not None:
        own, colour = MARKERS[session % len(MARKERS)], ROUNDS[round_number % len(ROUNDS)]
        if not figures_held_back and (own not in words or colour not in words):
            problems.append(f"its figures lack its own tokens {own!r}/{colour!r}")
        strangers = (words & set(MARKERS)) - {own}
        if strangers:
            problems.append(f"its figures show other students' tokens {sorted(strangers)}")
        stale = (words & set(ROUNDS)) - {colour}
        if stale:
            problems.append(f"its figures still show an earlier round {sorted(stale)}")
    return problems


def word_problems(session: int, answer: str, shown: set[str]) -> list[str]:
    """What is wrong with a word lesson: `shown` holds the words of the page's messages, which must name
    the student's own word and the answer the model wrote for it, and no other student's word."""
    own = student_word(session)
    problems = [] if {own, answer} <= shown else [f"its messages lack its own word {own!r} or answer {answer!r}"]
    strangers = (shown & set(MARKERS)) - {own}
    if strangers:
        problems.append(f"its messages name other students' words {sorted(strangers)}")
    return problems


# How a press of Train ends: every one of these is a polite, expected outcome.
TRAINING_OUTCOMES = {
    "Finished all": "finished",
    "Stopped after": "stopped by the budget",
    "Other training runs kept this server busy": "gave up waiting",
}
WAITING_NOTICE = "Another training is running"


def training_problems(word: str, outcome: str | None, figure_letters: set[str]) -> list[str]:
    """What is wrong with the page after Train: no outcome at all, or a trained model whose attention
    figures are not drawn on the trainer's own example word."""
    if outcome is None:
        return ["the training page showed no outcome (finished, stopped or gave up waiting)"]
    if outcome != "gave up waiting" and figure_letters != set(word):
        return [f"its attention figures show the letters {sorted(figure_letters)}, not those of {word!r}"]
    return []
