"""Train it yourself: retrain one of the app's three small models live and watch the loss fall.

The fresh model lives in this browser session only (st.session_state): it never replaces the shipped weights,
on disk or in the copy every session reads. Trainings take turns (anatomy.ui.training_slots), and in hosted
mode each run has a time budget.
"""

from __future__ import annotations

import time

import streamlit as st

from anatomy import live_training, training
from anatomy.devices import describe_device
from anatomy.live_training import LiveRun
from anatomy.recipes import RECIPES
from anatomy.ui import hosting, loaders, training_slots, widgets
from anatomy.ui.frame import ensure_entrypoint
from anatomy.viz import training as training_figures
from anatomy.viz.common import heatmap

ensure_entrypoint()

RESULT = "tr_result"   # session_state: this session's LiveRun (never a shared cache)
REQUESTED = "tr_requested"  # session_state: Train was pressed
DEFAULT_STEPS = 1000
MODELS = {"sorter": "Sorter", "sorter-cheater": "Cheating sorter", "reverser": "Reverser"}
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
INTRO = """
Each of the three small models in this app was trained right here, by the code you can read below. Now
train one yourself. Every **step** draws 64 fresh random words, asks the model to predict each answer letter
from the letters before it, measures how wrong it was (the **loss**: the cross-entropy, −log of the
probability it gave the right letter), and nudges all weights a little downhill. The **learning rate** sets
how far each nudge goes. A model that knows nothing guesses evenly among its letters and symbols: a loss of
about 3.4. A perfect model scores 0.
"""


def choose_settings() -> tuple[str, int, float, int]:
    """The model, steps, learning rate and seed, all kept in the URL (a link can be out of range: defaults)."""
    name = widgets.shared_choice("Model to train", "tr_model", MODELS, "sorter")
    st.markdown(ABOUT_MODEL[name])
    steps_column, rate_column, seed_column = st.columns(3)
    with steps_column:
        steps = widgets.shared_number_input(
            "Training steps", "tr_steps", live_training.MIN_STEPS, live_training.MAX_STEPS, DEFAULT_STEPS)
    with rate_column:
        rates = {f"{rate:g}": f"{rate:g}" for rate in live_training.LEARNING_RATES}
        rate = float(widgets.shared_choice("Learning rate", "tr_lr", rates, "0.003"))
    with seed_column:
        seed = widgets.shared_number_input("Seed", "tr_seed", 0, live_training.MAX_SEED, 0)
    st.caption(
        f"The seed draws the starting weights and the training words. Seed 0 with "
        f"{RECIPES[name].settings.steps:,} steps and learning rate 0.003 is the recipe of the shipped model."
    )
    return name, steps, rate, seed


def show_budget(budget: float | None, device_label: str, device_problem: str | None) -> None:
    if budget is not None:
        st.info(f"This shared server gives each run {budget:g} seconds: the run stops then, at whatever step "
                "it has reached.", icon=":material/timer:")
    st.caption(f"Training runs on this server's {device_label} (the accelerator when there is one), one run "
               "at a time: if someone else is training, yours starts when theirs ends.")
    if device_problem:
        st.warning(widgets.escape_markdown(device_problem), icon=":material/memory:")


def train_now(name: str, steps: int, rate: float, seed: int, budget: float | None, device) -> LiveRun | None:
    """Train while showing progress, a live loss curve, the step, the time and the device."""
    recipe = RECIPES[name]
    settings = live_training.live_settings(recipe, steps, rate, seed, budget)
    label = describe_device(device)
    notice, progress, chart = st.empty(), st.empty(), st.empty()
    with training_slots.training_slot(notice) as acquired:
        if not acquired:
            notice.warning(f"Other trainings kept this server busy for {training_slots.WAIT_LIMIT_S:.0f} s, so "
                           "yours did not start. Please press Train again in a minute.",
                           icon=":material/hourglass_disabled:")
            return None
        losses: list[float] = []
        clock = live_training.RedrawClock()
        started = time.perf_counter()
        chance = live_training.chance_loss(recipe)

        def on_step(step: int, loss: float) -> None:
            losses.append(loss)
            if not clock.due(step, steps):
                return
            elapsed = time.perf_counter() - started
            share = max((step + 1) / steps, elapsed / budget if budget else 0.0)
            progress.progress(min(share, 1.0), text=f"Step {step + 1:,} of {steps:,} · {elapsed:.1f} s · "
                                                    f"on {label} · loss {loss:.4f}")
            figure = training_figures.loss_curve(losses, steps, live_training.moving_average(losses), chance)
            chart.plotly_chart(figure, key=f"tr_live_{step}")

        # Only the training takes a turn: scoring the model happens after the slot is free for the next one.
        model, run = live_training.train_fresh(recipe, settings, seed, device, on_step)
    progress.empty()
    chart.empty()
    with st.spinner(f"Scoring it on {live_training.HELD_OUT_WORDS} held-out words…"):
        return live_training.scored(recipe, settings, seed, run, label, model)


@st.cache_data(show_spinner="Scoring the shipped model…")
def shipped_accuracy(name: str) -> float:
    """The shipped model's score on the same held-out words (the shared model is only read)."""
    shipped = loaders.get_model(str(RECIPES[name].folder))
    return live_training.held_out_accuracy(shipped.model, shipped.task)


def show_outcome(result: LiveRun) -> None:
    recipe, settings, run = RECIPES[result.recipe_name], result.settings, result.run
    st.subheader(f"Your {MODELS[result.recipe_name].lower()}")
    st.caption(f"Learning rate {settings.learning_rate:g}, seed {result.init_seed}, trained on {result.device}. "
               "It lives in this browser tab only: the shipped model stays as it was, for you and everyone else.")
    if result.stopped_early:
        st.warning(f"Stopped after {settings.time_budget_s:g} s at step {run.steps:,} of {settings.steps:,}: "
                   "the time budget of this shared server. The learning rate had not finished its slow-down, "
                   "so the last steps were still large ones.", icon=":material/timer_off:")
    else:
        st.success(f"Finished all {run.steps:,} steps in {run.seconds:.1f} s on {result.device} "
                   f"({run.steps / run.seconds:.0f} steps per second).", icon=":material/check_circle:")
    figure = training_figures.loss_curve(run.losses, settings.steps, live_training.moving_average(run.losses),
                                         live_training.chance_loss(recipe), title="Loss at every step")
    st.plotly_chart(figure, key="tr_loss")
    fresh, shipped, loss = st.columns(3)
    fresh.metric("Your model: words exactly right", f"{result.accuracy:.1%}",
                 help=f"{live_training.HELD_OUT_WORDS} held-out words, answered one letter at a time")
    shipped.metric("The shipped model", f"{shipped_accuracy(result.recipe_name):.1%}",
                   help=f"{recipe.settings.steps:,} steps, the same {live_training.HELD_OUT_WORDS} words")
    loss.metric("Final loss", f"{run.final_loss:.4g}", help="mean of the last 50 steps")
    if result.recipe_name == "sorter-cheater":
        st.markdown("A low loss and almost no right answers: during training the cheater read each answer "
                    "letter one position ahead. Writing on its own, it finds nothing there to copy.")
    show_example(result, recipe)


def show_example(result: LiveRun, recipe) -> None:
    st.subheader("What its attention learned")
    word = widgets.shared_text_input("Example word (3 to 8 letters a–z)", "tr_word", "banana", max_chars=8)
    word = word.strip().lower()
    try:
        view = live_training.example_attention(result.model, recipe.task, word)
    except ValueError as problem:
        st.warning(widgets.escape_markdown(str(problem)), icon=":material/spellcheck:")
        return
    widgets.show_literal(recipe.task.predict(result.model, [word])[0], label="Your model's answer")
    if view.kind == "self-attention":
        st.markdown("Rows are the positions that read, columns the positions they read. Look at the rows "
                    "from `=` on: each writes the next sorted letter, and a trained head looks straight at "
                    "that letter in the word.")
        if not recipe.config.causal:
            st.markdown("This model was trained without the causal mask: any weight above the diagonal is a "
                        "position reading tokens that come after it, which a real decoder never can.")
    else:
        st.markdown("Rows are the letters the decoder has written so far, columns the source letters. Each "
                    "row predicts the next output letter; trained, it reads the source from the back.")
    layers, heads = view.weights.shape[:2]
    for layer in range(layers):
        for head, column in zip(range(heads), st.columns(heads)):
            with column:
                st.plotly_chart(heatmap(
                    view.weights[layer, head], view.query_tokens, view.key_tokens,
                    title=f"{view.kind}, layer {layer}, head {head}", zmin=0.0, zmax=1.0,
                    row_title="reads (query)", column_title="is read (key)", hover_name="weight",
                ), key=f"tr_attention_{layer}_{head}")


st.title("Train it yourself")
st.markdown(INTRO)
budget = hosting.current().training_budget_seconds
device, device_problem = live_training.training_device()
name, steps, rate, seed = choose_settings()
show_budget(budget, describe_device(device), device_problem)
# The click is recorded by a callback: callbacks run before the script, so the request survives a rerun
# that happens before this line (a button's own return value would not).
st.button("Train", key="tr_train", type="primary", icon=":material/model_training:",
          on_click=lambda: st.session_state.update({REQUESTED: True}))
if st.session_state.pop(REQUESTED, False):
    st.session_state.pop(RESULT, None)  # the previous model goes, even if this run is interrupted
    outcome = train_now(name, steps, rate, seed, budget, device)
    if outcome is not None:
        st.session_state[RESULT] = outcome
if RESULT in st.session_state:
    show_outcome(st.session_state[RESULT])
else:
    st.info("Press **Train** to start from random weights.", icon=":material/play_arrow:")

widgets.show_source(training.train, training.teacher_forced_loss, training.learning_rate_factor,
                    live_training.train_fresh, live_training.scored, title="The code that trains it")
