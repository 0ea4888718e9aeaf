"""The training lesson's sections: the choices of a run, the run itself drawn live, and what it learned.

The fresh model lives in this browser session only (`st.session_state`, never a shared cache): it never
replaces the shipped weights, on disk or in the copy every session reads. Trainings take turns
(`lessons.common.training_slots`), and in hosted mode each run has a time budget. Every number comes from
`lessons.training.live`, every figure from `lessons.training.figures` and `lessons.common.plots`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import streamlit as st
import torch

from anatomy.config import DecoderConfig
from anatomy.devices import describe_device
from anatomy.training.recipes import RECIPES, Recipe
from anatomy.training.tasks import LetterTask
from lessons.common import hosting, training_slots
from lessons.common.safe_text import escape_markdown
from lessons.common.ui import charts, linked, loaders
from lessons.training import figures as training_figures
from lessons.training import links, text
from lessons.training import live as live_training
from lessons.training.live import LiveRun, UnfinishedRun

RESULT = "tr_result"  # session_state: this session's LiveRun (never a shared cache)
UNFINISHED = "tr_unfinished"  # session_state: this session's last run, stopped before it was done (UnfinishedRun)
REQUESTED = "tr_requested"  # session_state: Train was pressed
DEFAULT_STEPS = 1000


@dataclass(frozen=True)
class TrainingChoice:
    """What the learner asked for: which model, how many steps, how fast, from which seed."""

    model: str  # a recipe's name
    steps: int
    learning_rate: float
    seed: int


def choose_settings() -> TrainingChoice:
    """The model, steps, learning rate and seed, all kept in the link (a link can be out of range: defaults)."""
    name = linked.segmented("Model to train", links.MODEL, text.MODELS, "sorter")
    st.markdown(text.ABOUT_MODEL[name])
    steps_column, seed_column = st.columns(2)
    steps = linked.number_input(
        "Training steps",
        links.STEPS,
        live_training.MIN_STEPS,
        live_training.MAX_STEPS,
        DEFAULT_STEPS,
        container=steps_column,
    )
    seed = linked.number_input("Seed", links.SEED, 0, live_training.MAX_SEED, 0, container=seed_column)
    # The five rates take a line of their own: in a third of the row, 0.03 was cut off by its edge.
    rates = {f"{rate:g}": f"{rate:g}" for rate in live_training.LEARNING_RATES}
    rate = float(linked.segmented("Learning rate", links.LEARNING_RATE, rates, "0.003"))
    st.caption(text.shipped_recipe(RECIPES[name].settings.steps))
    return TrainingChoice(name, steps, rate, seed)


def show_where_it_runs() -> tuple[float | None, torch.device]:
    """This server's time budget for a run (None: no limit) and the device it trains on, both said aloud."""
    budget = hosting.current().training_budget_seconds
    device, device_problem = live_training.training_device()
    if budget is not None:
        st.info(text.time_budget(budget), icon=":material/timer:")
    st.caption(text.where_it_runs(describe_device(device)))
    if device_problem:
        st.warning(escape_markdown(device_problem), icon=":material/memory:")
    return budget, device


def train_when_asked(choice: TrainingChoice, budget: float | None, device: torch.device) -> LiveRun | None:
    """The Train button; a run when it was pressed. Returns this session's latest finished run, if any."""
    # The click is recorded by a callback: callbacks run before the script, so the request survives a rerun
    # that happens before this line (a button's own return value would not).
    st.button(
        "Train",
        key="tr_train",
        type="primary",
        icon=":material/model_training:",
        on_click=lambda: st.session_state.update({REQUESTED: True}),
    )
    if st.session_state.pop(REQUESTED, False):
        st.session_state.pop(RESULT, None)  # the previous model goes, even if this run is interrupted
        # The run is recorded before it starts and its losses are added as it trains: if Streamlit stops this
        # script (the learner opened another page, or changed a setting), nothing can be written any more, and
        # this record is what the page finds when the learner comes back.
        unfinished = st.session_state[UNFINISHED] = UnfinishedRun(choice.model, choice.steps)
        try:
            outcome = train_now(choice, budget, device, unfinished.losses)
        except Exception:  # a failure has its own error box; Streamlit's stop is a BaseException and passes
            del st.session_state[UNFINISHED]
            raise
        del st.session_state[UNFINISHED]  # finished, or refused a turn (which says so itself)
        if outcome is not None:
            st.session_state[RESULT] = outcome
    return st.session_state.get(RESULT)


def train_now(
    choice: TrainingChoice, budget: float | None, device: torch.device, losses: list[float]
) -> LiveRun | None:
    """Train while showing progress, a live loss curve, the step, the time and the device; each step's loss is
    appended to `losses` as it comes.

    The run lives in this script run. When the learner opens another page, or changes a setting, Streamlit
    (with its default fast reruns) starts a new script run at once and stops this one at its next call to st:
    the training ends there, and this thread may no longer touch the session, not even to say how far it got."""
    recipe, steps = RECIPES[choice.model], choice.steps
    settings = live_training.live_settings(recipe, steps, choice.learning_rate, choice.seed, budget)
    label = describe_device(device)
    notice, progress, chart = st.empty(), st.empty(), st.empty()
    with training_slots.training_slot(notice) as acquired:
        if not acquired:
            notice.warning(text.did_not_start(training_slots.WAIT_LIMIT_S), icon=":material/hourglass_disabled:")
            return None
        clock = live_training.RedrawClock()
        started = time.perf_counter()
        chance = live_training.chance_loss(recipe)

        def on_step(step: int, loss: float) -> None:
            losses.append(loss)
            if not clock.due(step, steps):
                return
            elapsed = time.perf_counter() - started
            progress.progress(
                live_training.progress_share(step, steps, elapsed, budget),
                text=text.progress(step, steps, elapsed, label, loss),
            )
            figure = training_figures.loss_curve(losses, steps, live_training.moving_average(losses), chance)
            charts.show(figure, key=f"tr_live_{step}", into=chart)

        # Only the training takes a turn: scoring the model happens after the slot is free for the next one.
        model, run = live_training.train_fresh(recipe, settings, choice.seed, device, on_step)
    progress.empty()
    chart.empty()
    with st.spinner(text.scoring(live_training.HELD_OUT_WORDS)):
        return live_training.with_held_out_accuracy(recipe, settings, choice.seed, run, label, model)


def show_unfinished_or_invite() -> None:
    """Before any finished run: what became of a run this session left unfinished, else the invitation to train."""
    unfinished: UnfinishedRun | None = st.session_state.get(UNFINISHED)
    if unfinished is None:
        st.info(text.PRESS_TRAIN, icon=":material/play_arrow:")
        return
    losses = list(unfinished.losses)  # a copy: the stopped run may add a step or two before it notices
    st.warning(text.left_unfinished(len(losses), unfinished.steps_planned), icon=":material/pause_circle:")
    if losses:
        figure = training_figures.loss_curve(
            losses,
            unfinished.steps_planned,
            live_training.moving_average(losses),
            live_training.chance_loss(RECIPES[unfinished.recipe_name]),
            title="Loss at every step until the run stopped",
        )
        charts.show(figure, key="tr_loss_unfinished")


@st.cache_data(show_spinner="Scoring the shipped model…")
def shipped_accuracy(name: str) -> float:
    """The shipped model's score on the same held-out words (the shared model is only read)."""
    shipped = loaders.get_model(str(RECIPES[name].folder))
    return live_training.held_out_accuracy(shipped.model, shipped.task_as(LetterTask))


def show_outcome(result: LiveRun) -> None:
    recipe, settings, run = RECIPES[result.recipe_name], result.settings, result.run
    st.subheader(f"Your {text.MODELS[result.recipe_name].lower()}")
    st.caption(text.kept_here(settings.learning_rate, result.init_seed, result.device))
    if result.stopped_early and settings.time_budget_s is not None:  # only a time budget stops a run early
        st.warning(text.stopped_early(settings.time_budget_s, run.steps, settings.steps), icon=":material/timer_off:")
    else:
        st.success(text.finished(run.steps, run.seconds, result.device), icon=":material/check_circle:")
    figure = training_figures.loss_curve(
        run.losses,
        settings.steps,
        live_training.moving_average(run.losses),
        live_training.chance_loss(recipe),
        title="Loss at every step",
    )
    charts.show(figure, key="tr_loss")
    fresh, shipped, loss = st.columns(3)
    fresh.metric(
        "Your model: words exactly right", f"{result.accuracy:.1%}", help=text.held_out(live_training.HELD_OUT_WORDS)
    )
    shipped.metric(
        "The shipped model",
        f"{shipped_accuracy(result.recipe_name):.1%}",
        help=text.shipped_steps(recipe.settings.steps, live_training.HELD_OUT_WORDS),
    )
    loss.metric("Final loss", f"{run.final_loss:.4g}", help="mean of the last 50 steps")
    if result.recipe_name == "sorter-cheater":
        st.markdown(text.CHEATER_RESULT)
    show_example(result, recipe)


def show_example(result: LiveRun, recipe: Recipe) -> None:
    """The fresh model's answer to an example word, and every head's attention on it."""
    st.subheader("What its attention learned")
    word = linked.text_input(text.EXAMPLE_WORD, links.WORD, "banana", max_chars=8).strip().lower()
    try:
        view = live_training.example_attention(result.model, recipe.task, word)
    except ValueError as problem:
        st.warning(escape_markdown(str(problem)), icon=":material/spellcheck:")
        return
    answer, expected = recipe.task.predict(result.model, [word])[0], recipe.task.answer(word)
    st.markdown(text.right_answer(word, answer) if answer == expected else text.wrong_answer(word, answer, expected))
    if view.kind == "self-attention":
        st.markdown(text.SELF_ATTENTION_EXAMPLE)
        if isinstance(recipe.config, DecoderConfig) and not recipe.config.causal:
            st.markdown(text.NO_CAUSAL_MASK)
    else:
        st.markdown(text.CROSS_ATTENTION_EXAMPLE)
    layers, heads = view.weights.shape[:2]
    for layer in range(layers):
        for head, column in zip(range(heads), st.columns(heads)):
            with column:
                charts.show(
                    training_figures.example_attention_figure(view, layer, head), key=f"tr_attention_{layer}_{head}"
                )
