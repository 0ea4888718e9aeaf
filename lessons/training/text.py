"""What the training lesson says: its prose, kept apart from the widgets that show it."""

from __future__ import annotations

from lessons.common.safe_text import escape_markdown

INTRO = """
Each of the three small models in this app was trained right here, by the code you can read below. Now
train one yourself. Every **step** draws 64 fresh random words, asks the model to predict each answer letter
from the letters before it, measures how wrong it was (the **loss**: the cross-entropy, −log of the
probability it gave the right letter), and nudges all weights a little downhill. The **learning rate** sets
how far each nudge goes. A model that knows nothing guesses evenly among its letters and symbols (how much
loss is that? *Check yourself* below); a perfect model scores 0.
"""

MODELS = {"sorter": "Sorter", "sorter-cheater": "Cheating sorter", "reverser": "Reverser"}  # recipe -> button
ABOUT_MODEL = {
    "sorter": (
        "A two-layer GPT-style decoder that reads a word and writes its letters in alphabetical order: "
        "`hello = ehllo`. To write each letter it must look back over the word for the smallest letter it has "
        "not written yet, so its attention ends up showing the algorithm."
    ),
    "sorter-cheater": (
        "The same decoder and the same words, trained **without the causal mask**. Shown the whole answer at "
        "once, every position can simply read the letter it is asked to predict from the next position. Watch "
        "its loss dive far below the honest sorter's, then see how many answers it gets right when it has to "
        "write them itself and the next letter is not there to copy."
    ),
    "reverser": (
        "An encoder-decoder: the encoder reads the word, the decoder writes it back to front, `hello → olleh`. "
        "Its cross-attention is where the learning shows: output letter *t* must read source letter "
        "*S − 1 − t*, an anti-diagonal."
    ),
}


def shipped_recipe(steps: int) -> str:
    return (
        f"The seed draws the starting weights and the training words. Seed 0 with {steps:,} steps and "
        "learning rate 0.003 is the recipe of the shipped model."
    )


# ----- where and how long it runs -----------------------------------------------------------------------


def time_budget(budget: float) -> str:
    return f"This shared server gives each run {budget:g} seconds: the run stops then, at whatever step it has reached."


def where_it_runs(device_label: str) -> str:
    return (
        f"Training runs on this server's {device_label} (the accelerator when there is one), one run at a time: "
        "if someone else is training, yours starts when theirs ends."
    )


def did_not_start(wait_limit_s: float) -> str:
    return (
        f"Other training runs kept this server busy for {wait_limit_s:.0f} s, so yours did not start. "
        "Please press Train again in a minute."
    )


def progress(step: int, steps: int, elapsed: float, device_label: str, loss: float) -> str:
    return f"Step {step + 1:,} of {steps:,} · {elapsed:.1f} s · on {device_label} · loss {loss:.4f}"


def scoring(held_out_words: int) -> str:
    return f"Scoring it on {held_out_words} held-out words…"


PRESS_TRAIN = "Press **Train** to start from random weights."


def left_unfinished(steps_done: int, steps_planned: int) -> str:
    """What became of a run the learner left: a run lasts only while its page is open and unchanged."""
    if steps_done == 0:
        return (
            "Your last run was still waiting for its turn when you left this page or changed a setting, so it "
            "never started. Press **Train** to start again."
        )
    return (
        f"Your last run stopped at step {steps_done:,} of {steps_planned:,} when you left this page or changed a "
        "setting: a run goes on only while its page stays open, and the half-trained model was not kept. Its loss "
        "curve so far is below. Press **Train** to start again."
    )


# ----- the outcome --------------------------------------------------------------------------------------


def kept_here(learning_rate: float, seed: int, device: str) -> str:
    return (
        f"Learning rate {learning_rate:g}, seed {seed}, trained on {device}. It lives in this browser tab only: "
        "the shipped model stays as it was, for you and everyone else."
    )


def stopped_early(budget: float, steps_done: int, steps_planned: int) -> str:
    return (
        f"Stopped after {budget:g} s at step {steps_done:,} of {steps_planned:,}: the time budget of this shared "
        "server. The learning rate had not finished its slow-down, so the last steps were still large ones."
    )


def finished(steps: int, seconds: float, device: str) -> str:
    return f"Finished all {steps:,} steps in {seconds:.1f} s on {device} ({steps / seconds:.0f} steps per second)."


def held_out(words: int) -> str:
    return f"{words} held-out words, answered one letter at a time"


def shipped_steps(steps: int, words: int) -> str:
    return f"{steps:,} steps, the same {words} words"


CHEATER_RESULT = (
    "A low loss and almost no right answers: during training the cheater read each answer letter one position "
    "ahead. Writing on its own, it finds nothing there to copy."
)

# ----- the example word ---------------------------------------------------------------------------------

EXAMPLE_WORD = "Example word (3 to 8 letters a–z)"


# Marked in colour, not in an error box: a wrong answer is the model's mistake, not the app's.
def right_answer(word: str, answer: str) -> str:
    return f"Your model wrote **{escape_markdown(answer)}** for *{escape_markdown(word)}*: :green[**right** ✓]"


def wrong_answer(word: str, answer: str, expected: str) -> str:
    return (
        f"Your model wrote **{escape_markdown(answer)}** for *{escape_markdown(word)}*: :red[**wrong** ✗]. "
        f"The right answer is **{escape_markdown(expected)}**."
    )


SELF_ATTENTION_EXAMPLE = (
    "Rows are the positions that read, columns the positions they read. Look at the rows from `=` on: each "
    "writes the next sorted letter, and a trained head looks straight at that letter in the word."
)
NO_CAUSAL_MASK = (
    "This model was trained without the causal mask: any weight above the diagonal is a position reading tokens "
    "that come after it, which a real decoder never can."
)
CROSS_ATTENTION_EXAMPLE = (
    "Rows are the letters the decoder has written so far, columns the source letters. Each row predicts the next "
    "output letter; trained, it reads the source from the back."
)

SOURCE_TITLE = "The code that trains it"
