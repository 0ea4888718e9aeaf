"""A small training loop: fresh random examples every step, teacher forcing, cross-entropy, AdamW.

*Teacher forcing* means the model never trains on its own mistakes: every position is shown the true tokens
before it and asked for the next one, so a whole sequence is scored in one forward pass. Only the answer
positions count (see `tasks.Batch.targets`).

Nothing here touches global state. Weights are initialised and examples drawn from `torch.Generator`s made
from the seed, so the same seed gives bit-identical weights on the same machine (with the same number of
torch threads), and a training run in one browser session changes nothing in another.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from anatomy.training.tasks import IGNORE_INDEX, Batch, LetterTask


@dataclass(frozen=True, kw_only=True)
class TrainingSettings:
    """How long and how fast to train."""

    steps: int = 2000  # optimizer updates (each on a fresh batch)
    batch_size: int = 64
    learning_rate: float = 3e-3  # peak, reached after the warm-up, then cosine decay to 10 %
    warmup_steps: int = 100
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0  # clip the gradient's norm: one bad batch cannot throw the model far
    seed: int = 0  # seeds the examples; the initial weights have their own seed
    time_budget_s: float | None = None  # stop early after this many seconds (a live demo); None: run all steps


@dataclass(frozen=True)
class TrainingRun:
    """What a run did: the loss of every step and how long it took."""

    losses: tuple[float, ...]
    seconds: float

    @property
    def steps(self) -> int:
        return len(self.losses)

    @property
    def final_loss(self) -> float:
        """Mean loss of the last 50 steps (one batch alone is noisy)."""
        tail = self.losses[-50:]
        return sum(tail) / len(tail)


def initialize_weights(model: nn.Module, seed: int, std: float = 0.02) -> nn.Module:
    """GPT-2's initialisation, drawn from a generator of our own: every matrix and embedding N(0, std²),
    biases 0, LayerNorms the identity (gain 1, shift 0)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, 0.0, std, generator=generator)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
            if isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
    return model


def build_model(model_class: Callable[..., nn.Module], config, seed: int) -> nn.Module:
    """A fresh model whose weights depend on `seed` only.

    Constructing torch modules draws default weights from the global generator; `fork_rng` puts that
    generator back afterwards, and `initialize_weights` then overwrites every weight from `seed`.
    """
    with torch.random.fork_rng(devices=[]):
        model = model_class(config)
    return initialize_weights(model, seed)


def learning_rate_factor(step: int, settings: TrainingSettings) -> float:
    """Linear warm-up from 0 to 1, then a cosine down to 0.1 at the last step."""
    if step < settings.warmup_steps:
        return (step + 1) / settings.warmup_steps
    progress = (step - settings.warmup_steps) / max(1, settings.steps - settings.warmup_steps)
    return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))


def teacher_forced_loss(model: nn.Module, batch: Batch) -> Tensor:
    """Mean cross-entropy of the scored positions: −log p(true next token), averaged."""
    logits = model(**batch.inputs).logits  # (B, T, V)
    return F.cross_entropy(logits.flatten(0, 1), batch.targets.flatten(), ignore_index=IGNORE_INDEX)


def train(
    model: nn.Module,
    task: LetterTask,
    settings: TrainingSettings,
    on_step: Callable[[int, float], None] | None = None,
) -> TrainingRun:
    """Train `model` in place on fresh examples of `task`; call on_step(step, loss) after every update.

    The model ends in eval mode. With `settings.time_budget_s` the run may stop before `settings.steps`
    (the schedule is still the one planned for `settings.steps`).
    """
    examples = torch.Generator().manual_seed(settings.seed)
    device = next(model.parameters()).device
    # foreach: each update is a few calls over all the weight tensors, not a loop of calls per tensor (torch's
    # default outside CUDA): the same weights bit for bit, and far fewer calls for a model of small tensors.
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=settings.learning_rate,
        betas=(0.9, 0.98),
        weight_decay=settings.weight_decay,
        foreach=True,
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: learning_rate_factor(step, settings))
    model.train()
    losses: list[float] = []
    start = time.perf_counter()
    for step in range(settings.steps):
        batch = task.batch(task.sample_words(settings.batch_size, examples)).to(device)
        loss = teacher_forced_loss(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), settings.max_grad_norm)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step, losses[-1])
        if settings.time_budget_s is not None and time.perf_counter() - start >= settings.time_budget_s:
            break
    model.eval()
    return TrainingRun(tuple(losses), time.perf_counter() - start)
