"""The training loop: reproducible from its seeds, free of global side effects, observable step by step."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from anatomy.config import DecoderConfig
from anatomy.models import DecoderOnlyLM
from anatomy.training.loop import (
    TrainingSettings,
    build_model,
    learning_rate_factor,
    teacher_forced_loss,
)
from anatomy.training.recipes import RECIPES
from anatomy.training.tasks import IGNORE_INDEX

pytestmark = pytest.mark.usefixtures("one_thread")

SHORT = 20


def weights_after(recipe_name: str, **overrides):
    model, run = RECIPES[recipe_name].train(steps=SHORT, **overrides)
    return model.state_dict(), run


def same_weights(left: dict, right: dict) -> bool:
    return left.keys() == right.keys() and all(torch.equal(left[name], right[name]) for name in left)


@pytest.mark.slow
@pytest.mark.parametrize("recipe_name", ["sorter", "reverser"])
def test_two_short_runs_from_the_same_seeds_give_bit_identical_weights(recipe_name):
    (first, first_run), (second, second_run) = weights_after(recipe_name), weights_after(recipe_name)
    assert same_weights(first, second)
    assert first_run.losses == second_run.losses
    assert not same_weights(first, RECIPES[recipe_name].build().state_dict())  # training did change them


@pytest.mark.slow
def test_another_example_seed_or_another_initial_seed_gives_other_weights():
    reference, _ = weights_after("sorter")
    other_examples, _ = weights_after("sorter", seed=2)
    assert not same_weights(reference, other_examples)
    other_start = build_model(DecoderOnlyLM, RECIPES["sorter"].config, seed=1).state_dict()
    assert not same_weights(RECIPES["sorter"].build().state_dict(), other_start)


@pytest.mark.parametrize("recipe_name", ["sorter", "reverser"])
def test_the_update_over_all_weights_at_once_gives_the_weights_of_torchs_loop_over_each_weight(
    recipe_name, monkeypatch
):
    grouped, grouped_run = weights_after(recipe_name)
    adamw = torch.optim.AdamW
    monkeypatch.setattr(torch.optim, "AdamW", lambda *args, **kwargs: adamw(*args, **{**kwargs, "foreach": False}))
    looped, looped_run = weights_after(recipe_name)
    assert same_weights(grouped, looped)
    assert grouped_run.losses == looped_run.losses


def test_building_and_training_leave_the_global_random_generator_untouched():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    RECIPES["sorter-cheater"].train(steps=3)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.slow
def test_on_step_sees_every_step_and_the_loss_falls_from_chance():
    seen: list[tuple[int, float]] = []
    _, run = RECIPES["sorter"].train(on_step=lambda step, loss: seen.append((step, loss)), steps=60)
    assert [step for step, _ in seen] == list(range(60))
    assert tuple(loss for _, loss in seen) == run.losses
    vocabulary = RECIPES["sorter"].config.vocab_size
    assert run.losses[0] == pytest.approx(math.log(vocabulary), rel=0.05)  # uniform guess over 30 tokens: 3.40
    assert run.final_loss < run.losses[0] - 0.5


def test_a_time_budget_stops_the_run_early_and_the_model_ends_in_eval_mode():
    model, run = RECIPES["reverser"].train(steps=1000, time_budget_s=0.0)
    assert run.steps == 1
    assert not model.training


def test_the_learning_rate_warms_up_linearly_then_decays_to_a_tenth():
    settings = TrainingSettings(steps=1000, warmup_steps=100)
    assert learning_rate_factor(0, settings) == pytest.approx(0.01)
    assert learning_rate_factor(49, settings) == pytest.approx(0.5)
    assert learning_rate_factor(100, settings) == pytest.approx(1.0)
    assert learning_rate_factor(550, settings) == pytest.approx(0.55)
    assert learning_rate_factor(1000, settings) == pytest.approx(0.1)


def test_the_loss_is_cross_entropy_over_the_scored_positions_only():
    recipe = RECIPES["sorter"]
    model = recipe.build()
    batch = recipe.task.batch(["cab", "hello", "zyxwvuts"])
    with torch.no_grad():
        loss = teacher_forced_loss(model, batch)
        logits = model(**batch.inputs).logits
    scored = batch.targets != IGNORE_INDEX
    by_hand = F.cross_entropy(logits[scored], batch.targets[scored])
    assert loss.item() == pytest.approx(by_hand.item(), abs=1e-6)
    assert scored.sum().item() == 4 + 6 + 9  # answers and their <eos>


def test_initialisation_follows_gpt2_small_normal_weights_and_zero_biases():
    model = build_model(DecoderOnlyLM, replace(RECIPES["sorter"].config, width=128), seed=0)
    weight = model.layers[0].feed_forward.expand.weight
    assert weight.std().item() == pytest.approx(0.02, rel=0.05)
    assert torch.all(model.layers[0].feed_forward.expand.bias == 0)
    assert torch.all(model.final_norm.weight == 1)


@pytest.mark.parametrize("causal", [True, False])
def test_only_without_the_causal_mask_can_a_future_token_change_earlier_predictions(causal):
    config = DecoderConfig(vocab_size=10, max_positions=8, width=32, num_layers=2, num_heads=2, causal=causal)
    model = build_model(DecoderOnlyLM, config, seed=0).eval()
    assert [layer.causal for layer in model.layers] == [causal, causal]
    tokens = torch.tensor([[1, 2, 3, 4, 5]])
    changed_last = torch.tensor([[1, 2, 3, 4, 9]])
    with torch.no_grad():
        difference = (model(tokens).logits[:, :4] - model(changed_last).logits[:, :4]).abs().max().item()
    assert (difference == 0.0) if causal else (difference > 1e-4)
