"""Retraining one of the small models live, for one learner: a fresh copy, a few seconds of training, a score.

The shipped models in `anatomy/checkpoints/trained/` were made by `recipes.py`. Here a learner reruns one of those
recipes with their own number of steps, learning rate and seed, on whatever device this machine offers,
and watches the loss fall. The model built here is new every time: it never touches the shipped weights,
on disk or in the copy every browser session reads.

One number, the seed, sets both random streams of a recipe: the initial weights come from `seed` and the
training words from `seed + 1`. The shipped recipes used seed 0 (weights 0, words 1), so seed 0 with the
recipe's own steps and learning rate retrains the shipped model. Test words come from `HELD_OUT_SEED`,
which no seed offered here can reach.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch
from torch import Tensor, nn

from anatomy.devices import DeviceUnavailableError, choose_device
from anatomy.training.loop import TrainingRun, TrainingSettings, teacher_forced_loss, train
from anatomy.training.recipes import HELD_OUT_SEED, Recipe
from anatomy.training.tasks import IGNORE_INDEX, LetterTask, SortingTask

MIN_STEPS, MAX_STEPS = 10, 5000  # the cap outside hosted mode: about 75 s of the sorter on 2 CPU cores
MAX_SEED = 9_999  # far below HELD_OUT_SEED: no training word list is the test list
HELD_OUT_WORDS = 300  # test words per evaluation: one wrong word moves the score by 0.3 %
LEARNING_RATES = (3e-4, 1e-3, 3e-3, 1e-2, 3e-2)  # the recipes use 3e-3; the ends show too slow and too fast
SMOOTHING_WINDOW = 50  # steps averaged in the smoothed curve (TrainingRun.final_loss uses 50 too)


@dataclass(frozen=True)
class LiveRun:
    """A finished live run: what was asked, what happened, and the freshly trained model."""

    recipe_name: str
    settings: TrainingSettings  # steps is the number planned; run.steps the number done
    init_seed: int
    run: TrainingRun
    device: str  # e.g. "CPU" or "CUDA (NVIDIA H100 80GB HBM3)"
    model: nn.Module  # in eval mode; belongs to one browser session only
    accuracy: float  # exact-match rate on HELD_OUT_WORDS words from HELD_OUT_SEED

    @property
    def stopped_early(self) -> bool:
        """The time budget ran out before the planned steps were done."""
        return self.run.steps < self.settings.steps


@dataclass
class UnfinishedRun:
    """A live run not finished yet: what was asked, and the loss of every step done so far (the list grows as the
    run trains; it is empty while the run waits for its turn). What is left of it if the run is stopped."""

    recipe_name: str
    steps_planned: int
    losses: list[float] = field(default_factory=list)


def training_device() -> tuple[torch.device, str | None]:
    """The device to train on (the accelerator if there is one), and why it is the CPU when one was asked for
    but is missing."""
    try:
        return choose_device(), None
    except DeviceUnavailableError as error:
        return torch.device("cpu"), str(error)


def live_settings(
    recipe: Recipe, steps: int, learning_rate: float, seed: int, time_budget_s: float | None = None
) -> TrainingSettings:
    """The recipe's settings with the learner's choices; the training words come from `seed + 1`."""
    return replace(
        recipe.settings, steps=steps, learning_rate=learning_rate, seed=seed + 1, time_budget_s=time_budget_s
    )


def fresh_model(recipe: Recipe, seed: int, device: torch.device | str = "cpu") -> nn.Module:
    """The recipe's untrained model with initial weights from `seed`, on `device`."""
    return replace(recipe, init_seed=seed).build().to(device)


def train_fresh(
    recipe: Recipe,
    settings: TrainingSettings,
    init_seed: int,
    device: torch.device,
    on_step: Callable[[int, float], None] | None = None,
) -> tuple[nn.Module, TrainingRun]:
    """Build a fresh model and train it with `settings` (the part of a live run that takes turns)."""
    model = fresh_model(recipe, init_seed, device)
    return model, train(model, recipe.task, settings, on_step)


def with_held_out_accuracy(
    recipe: Recipe, settings: TrainingSettings, init_seed: int, run: TrainingRun, device_label: str, model: nn.Module
) -> LiveRun:
    """A trained model with its held-out exact-match rate (it needs no turn: the next training may run)."""
    return LiveRun(recipe.name, settings, init_seed, run, device_label, model, held_out_accuracy(model, recipe.task))


def held_out_words(task: LetterTask, count: int = HELD_OUT_WORDS) -> list[str]:
    """Test words no live run trains on: the same `count` words every time."""
    return task.sample_words(count, torch.Generator().manual_seed(HELD_OUT_SEED))


def held_out_accuracy(model: nn.Module, task: LetterTask, count: int = HELD_OUT_WORDS) -> float:
    """The share of held-out words the model answers exactly right, writing its answer on its own."""
    right = task.written_right(model, held_out_words(task, count))
    return sum(right) / len(right)


def chance_loss(recipe: Recipe) -> float:
    """The loss of a model that spreads its bet evenly over the vocabulary: ln V (ln 30 = 3.40)."""
    return math.log(recipe.config.vocab_size)


@dataclass(frozen=True)
class FirstBets:
    """A fresh model on the first batch its training draws, before any update: what it bets on each token."""

    loss: float  # the loss step 1 reports: mean −log p(true next token) over the scored positions
    probabilities: Tensor  # (V,) the probability it gives each token, averaged over the scored positions
    tokens: tuple[str, ...]  # the V tokens of the vocabulary, in id order


@torch.no_grad()
def first_bets(recipe: Recipe, seed: int) -> FirstBets:
    """The untrained model of `seed` on the first batch `train` draws with the same seed, on the CPU."""
    model = fresh_model(recipe, seed)
    settings = live_settings(recipe, recipe.settings.steps, recipe.settings.learning_rate, seed)  # words: seed + 1
    words = recipe.task.sample_words(settings.batch_size, torch.Generator().manual_seed(settings.seed))
    batch = recipe.task.batch(words)
    scored = batch.targets != IGNORE_INDEX  # (B, T): the answer positions, the only ones the loss counts
    probabilities = model(**batch.inputs).logits[scored].softmax(dim=-1).mean(dim=0)  # (V,)
    loss = teacher_forced_loss(model, batch)  # the very function the training loop calls at step 1
    return FirstBets(float(loss), probabilities, tuple(recipe.task.tokenizer.tokens))


def moving_average(losses: list[float] | tuple[float, ...], window: int = SMOOTHING_WINDOW) -> list[float]:
    """Entry i is the mean of the losses of steps max(0, i − window + 1) .. i: one batch alone is noisy."""
    averages, total = [], 0.0
    for index, loss in enumerate(losses):
        total += loss
        if index >= window:
            total -= losses[index - window]
        averages.append(total / min(index + 1, window))
    return averages


def progress_share(step: int, total_steps: int, elapsed_s: float, time_budget_s: float | None) -> float:
    """How far a run is, from 0 to 1: by its steps, or by its time when a budget will stop it sooner."""
    share = max((step + 1) / total_steps, elapsed_s / time_budget_s if time_budget_s else 0.0)
    return min(share, 1.0)


class RedrawClock:
    """Says when a live view is worth redrawing: at most every `interval_s` seconds, and at the last step.

    Redrawing after every step would send the browser hundreds of charts a second; this keeps it to a few.
    One clock per run (it remembers when it last said yes).
    """

    def __init__(self, interval_s: float = 0.4, clock: Callable[[], float] = time.perf_counter):
        self.interval_s = interval_s
        self._clock = clock
        self._last = clock()

    def due(self, step: int, total_steps: int) -> bool:
        now = self._clock()
        if step + 1 >= total_steps or now - self._last >= self.interval_s:
            self._last = now
            return True
        return False


@dataclass(frozen=True)
class AttentionView:
    """Every head's attention on one example: self-attention of a decoder, or a seq2seq's cross-attention."""

    weights: Tensor  # (L, H, T, S) on the CPU: layer, head, query, key
    query_tokens: tuple[str, ...]  # T names of the rows
    key_tokens: tuple[str, ...]  # S names of the columns
    kind: str  # "self-attention" or "cross-attention"


@torch.no_grad()
def example_attention(model: nn.Module, task: LetterTask, word: str) -> AttentionView:
    """The attention of every head on the teacher-forced example of `word` (the input the model trains on).

    A sorter reads `<bos> word = sorted` in one sequence: its self-attention is (T, T). A reverser's decoder
    reads the source through cross-attention: (T target tokens, S source letters).
    """
    task.check(word)
    batch = task.batch([word])
    output = model(**batch.to(next(model.parameters()).device).inputs, trace=True)
    decode = task.tokenizer.decode
    if isinstance(task, SortingTask):
        maps, kind = output.attentions, "self-attention"
        queries = keys = decode(batch.inputs["input_ids"][0])
    else:
        maps, kind = output.cross_attentions, "cross-attention"
        queries, keys = decode(batch.inputs["target_ids"][0]), decode(batch.inputs["source_ids"][0])
    weights = torch.stack([layer[0] for layer in maps]).to("cpu")  # (L, H, T, S)
    return AttentionView(weights, tuple(queries), tuple(keys), kind)
