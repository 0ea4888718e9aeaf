"""Live training: a learner's fresh model, its score on held-out words, its attention, and the redraw clock.

Measured on the shipped files: the sorter and the reverser answer all 300 held-out words exactly, an
untrained sorter none. Training runs here are 20 steps on one thread (well under a second), 150 in the slow check
that one teacher-forced pass scores a model as writing its answers out does, and 300 in the slow check that the
cheater's answers, written only while in doubt, are judged as when written in full
(26 of the 300 right on this machine).
"""

from __future__ import annotations

import hashlib
import math

import pytest
import torch

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.training.recipes import HELD_OUT_SEED, RECIPES
from anatomy.training.tasks import IGNORE_INDEX
from lessons.training import live as live_training
from lessons.training.live import (
    RedrawClock,
    example_attention,
    fresh_model,
    live_settings,
    moving_average,
    progress_share,
)

pytestmark = pytest.mark.usefixtures("one_thread")

SORTER, CHEATER, REVERSER = RECIPES["sorter"], RECIPES["sorter-cheater"], RECIPES["reverser"]


@pytest.fixture(scope="module")
def shipped():
    return {name: load_pretrained(str(recipe.folder), device="cpu") for name, recipe in RECIPES.items()}


def same_weights(left: torch.nn.Module, right: torch.nn.Module) -> bool:
    first, second = left.state_dict(), right.state_dict()
    return first.keys() == second.keys() and all(torch.equal(first[name], second[name]) for name in first)


# --- Seeds and settings -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_seed_zero_with_the_recipes_steps_and_rate_is_the_shipped_recipe(name):
    recipe = RECIPES[name]
    assert live_settings(recipe, recipe.settings.steps, 3e-3, seed=0) == recipe.settings
    assert same_weights(fresh_model(recipe, seed=0), recipe.build())


def test_the_seed_draws_the_initial_weights_and_seed_plus_one_the_training_words():
    assert not same_weights(fresh_model(SORTER, seed=1), fresh_model(SORTER, seed=0))
    assert same_weights(fresh_model(SORTER, seed=7), fresh_model(SORTER, seed=7))
    settings = live_settings(SORTER, steps=250, learning_rate=1e-2, seed=7, time_budget_s=30.0)
    assert (settings.steps, settings.learning_rate, settings.seed, settings.time_budget_s) == (250, 1e-2, 8, 30.0)
    assert (settings.batch_size, settings.warmup_steps) == (64, 100)  # the rest is the recipe's


def test_no_seed_offered_to_learners_trains_on_the_held_out_words():
    assert live_training.MAX_SEED + 1 < HELD_OUT_SEED


def test_the_learning_rates_offered_include_every_recipes_own_and_span_a_hundredfold():
    rates = live_training.LEARNING_RATES
    assert {recipe.settings.learning_rate for recipe in RECIPES.values()} <= set(rates)
    assert max(rates) / min(rates) == pytest.approx(100)


# --- Training and scoring ------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_live_run_trains_a_fresh_model_scores_it_and_leaves_the_shipped_file_alone():
    weights_file = SORTER.folder / "model.safetensors"
    before = hashlib.sha256(weights_file.read_bytes()).hexdigest()
    seen: list[int] = []
    settings = live_settings(SORTER, steps=20, learning_rate=3e-3, seed=0)
    model, run = live_training.train_fresh(
        SORTER, settings, 0, torch.device("cpu"), on_step=lambda step, loss: seen.append(step)
    )
    result = live_training.with_held_out_accuracy(SORTER, settings, 0, run, "CPU", model)
    assert seen == list(range(20)) and result.run.steps == 20 and not result.stopped_early
    assert all(math.isfinite(loss) for loss in result.run.losses)
    assert result.run.losses[0] == pytest.approx(math.log(30), rel=0.05)  # a uniform guess over 30 tokens
    assert not result.model.training
    assert result.accuracy == live_training.held_out_accuracy(result.model, SORTER.task)
    assert result.accuracy < 0.05  # 20 steps teach almost nothing
    assert (result.recipe_name, result.device, result.init_seed) == ("sorter", "CPU", 0)
    assert hashlib.sha256(weights_file.read_bytes()).hexdigest() == before


def test_a_time_budget_stops_a_live_run_early_and_the_run_says_so():
    settings = live_settings(REVERSER, steps=1000, learning_rate=3e-3, seed=0, time_budget_s=0.0)
    model, run = live_training.train_fresh(REVERSER, settings, 0, torch.device("cpu"))
    result = live_training.with_held_out_accuracy(REVERSER, settings, 0, run, "CPU", model)
    assert result.run.steps == 1 and result.stopped_early


def test_the_held_out_words_are_the_same_300_words_of_3_to_8_letters_every_time():
    words = live_training.held_out_words(SORTER.task)
    assert len(words) == 300 and words == live_training.held_out_words(SORTER.task)
    assert all(3 <= len(word) <= 8 and word.isalpha() and word.islower() for word in words)
    assert words == SORTER.task.sample_words(300, torch.Generator().manual_seed(HELD_OUT_SEED))


def test_the_shipped_sorter_and_reverser_answer_every_held_out_word_and_a_random_model_none(shipped):
    assert live_training.held_out_accuracy(shipped["sorter"].model, SORTER.task) == 1.0
    assert live_training.held_out_accuracy(shipped["reverser"].model, REVERSER.task) == 1.0
    assert live_training.held_out_accuracy(fresh_model(SORTER, seed=0), SORTER.task) == 0.0


def written_out(recipe, model, words: list[str]) -> list[bool]:
    """Whether each answer `predict` writes, one greedy token at a time, is exactly right."""
    return [answer == recipe.task.answer(word) for answer, word in zip(recipe.task.predict(model, words), words)]


@pytest.mark.slow  # two to three seconds each: 150 training steps
@pytest.mark.parametrize("name", ["sorter", "reverser"])
def test_one_teacher_forced_pass_decides_the_same_words_as_writing_each_answer_out(name, shipped):
    recipe = RECIPES[name]
    words = live_training.held_out_words(recipe.task)
    settings = live_settings(recipe, steps=150, learning_rate=3e-3, seed=1)
    half_trained, _ = live_training.train_fresh(recipe, settings, 1, torch.device("cpu"))
    half_trained.eval()
    models = {"fresh": fresh_model(recipe, seed=1), "150 steps": half_trained, "shipped": shipped[name].model}
    right = {label: recipe.task.written_right(model, words) for label, model in models.items()}
    assert {label: written_out(recipe, models[label], words) for label in models} == right  # word by word
    assert 0.3 < sum(right["150 steps"]) / len(words) < 0.95  # some words right, some wrong: the case that counts


def test_the_cheater_reads_the_answer_in_one_pass_so_its_answers_are_written_out(shipped):
    cheater, words = shipped["sorter-cheater"].model, live_training.held_out_words(CHEATER.task)
    assert not CHEATER.task.reads_only_earlier_tokens(cheater)
    assert CHEATER.task.written_right(cheater, words) == written_out(CHEATER, cheater, words)
    batch = CHEATER.task.batch(words)  # teacher forcing: every position also sees the answer's later letters
    predicted, scored = cheater(**batch.inputs).logits.argmax(dim=-1), batch.targets != IGNORE_INDEX
    right_in_one_pass = ((predicted == batch.targets) | ~scored).all(dim=1)
    assert right_in_one_pass.float().mean() > 0.9 > live_training.held_out_accuracy(cheater, CHEATER.task)


@pytest.mark.slow  # about two seconds: 300 training steps
def test_the_cheaters_answers_written_only_while_in_doubt_are_judged_as_when_written_in_full(shipped):
    words = live_training.held_out_words(CHEATER.task)
    settings = live_settings(CHEATER, steps=300, learning_rate=CHEATER.settings.learning_rate, seed=7)
    trained, _ = live_training.train_fresh(CHEATER, settings, 7, torch.device("cpu"))
    trained.eval()
    models = {"fresh": fresh_model(CHEATER, seed=7), "300 steps": trained, "shipped": shipped["sorter-cheater"].model}
    right = {label: CHEATER.task.written_right(model, words) for label, model in models.items()}
    assert {label: written_out(CHEATER, models[label], words) for label in models} == right  # word by word
    assert 0 < sum(right["300 steps"]) < len(words)  # some words right, some wrong: the case that counts


def test_a_cheaters_word_is_not_written_past_its_first_wrong_token():
    words = live_training.held_out_words(CHEATER.task)
    untrained = fresh_model(CHEATER, seed=7)
    forwards = []
    untrained.register_forward_hook(lambda module, inputs, output: forwards.append(inputs[0].shape))
    assert not any(CHEATER.task.written_right(untrained, words))
    lengths = sorted({len(word) for word in words})  # 3 to 8 letters: the words of each length are one batch
    # Every word is wrong at its first token, so each batch is read once, with its prompt `<bos> word =`
    # alone, where writing the answers out reads each batch once per token (4 to 9 times).
    assert [shape[1] for shape in forwards] == [length + 2 for length in lengths]


def test_a_uniform_guess_costs_ln_of_the_vocabulary():
    assert live_training.chance_loss(SORTER) == pytest.approx(3.4012, abs=1e-4)  # ln 30
    assert live_training.chance_loss(REVERSER) == pytest.approx(math.log(30))


def test_the_device_falls_back_to_the_cpu_with_the_reason_when_the_requested_one_is_missing(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("ANATOMY_DEVICE", "cuda")
    device, problem = live_training.training_device()
    assert device == torch.device("cpu") and "ANATOMY_DEVICE" in problem
    monkeypatch.setenv("ANATOMY_DEVICE", "cpu")
    assert live_training.training_device() == (torch.device("cpu"), None)


# --- The curve and its redraws -------------------------------------------------------------------------


def test_the_moving_average_takes_the_mean_of_the_last_window_steps():
    assert moving_average([4.0, 2.0, 6.0, 0.0], window=2) == [4.0, 3.0, 4.0, 3.0]
    assert moving_average([4.0, 2.0, 6.0, 0.0], window=3) == [4.0, 3.0, 4.0, pytest.approx(8 / 3)]
    assert moving_average([]) == []
    assert moving_average([1.0] * 120)[-1] == pytest.approx(1.0)


def test_the_redraw_clock_fires_at_most_every_interval_and_always_at_the_last_step():
    now = [0.0]
    clock = RedrawClock(interval_s=0.4, clock=lambda: now[0])
    fired = []
    for step in range(100):  # 100 steps of 10 ms: 1 s in all
        now[0] += 0.01
        if clock.due(step, total_steps=100):
            fired.append(step)
    assert fired == [39, 79, 99]  # at 0.40 s, 0.80 s, and the last step


def test_progress_counts_steps_or_the_time_budget_whichever_is_further_and_never_passes_one():
    assert progress_share(step=49, total_steps=200, elapsed_s=1.0, time_budget_s=None) == 0.25
    assert progress_share(step=49, total_steps=200, elapsed_s=1.0, time_budget_s=30.0) == 0.25  # steps ahead
    assert progress_share(step=9, total_steps=5000, elapsed_s=15.0, time_budget_s=30.0) == 0.5  # time ahead
    assert progress_share(step=99, total_steps=5000, elapsed_s=31.0, time_budget_s=30.0) == 1.0  # past the budget


# --- Attention on an example ---------------------------------------------------------------------------


def test_the_sorters_attention_is_one_causal_square_map_per_layer_and_head_on_the_training_input(shipped):
    view = example_attention(shipped["sorter"].model, SORTER.task, "banana")
    # <bos> b a n a n a = a a a b n n: 14 positions (the model reads all but the final <eos>)
    assert view.kind == "self-attention" and tuple(view.weights.shape) == (2, 2, 14, 14)
    assert view.query_tokens == view.key_tokens == ("<bos>", *"banana", "=", *"aaabnn")
    assert torch.allclose(view.weights.sum(-1), torch.ones(2, 2, 14), atol=1e-5)
    assert view.weights.triu(diagonal=1).abs().max().item() == 0.0  # nothing reads the future


def test_the_cheaters_attention_reads_the_future(shipped):
    view = example_attention(shipped["sorter-cheater"].model, CHEATER.task, "banana")
    assert view.weights.triu(diagonal=1).sum(-1).max().item() > 0.5  # some row puts most weight ahead


def test_the_reversers_view_is_cross_attention_from_each_written_letter_to_the_source(shipped):
    view = example_attention(shipped["reverser"].model, REVERSER.task, "planet")
    assert view.kind == "cross-attention" and tuple(view.weights.shape) == (1, 2, 7, 6)
    assert view.query_tokens == ("<bos>", *"tenalp") and view.key_tokens == tuple("planet")
    for head in range(2):  # step t writes letter S - 1 - t, and reads it there
        assert view.weights[0, head, :6].argmax(-1).tolist() == [5, 4, 3, 2, 1, 0]


@pytest.mark.parametrize("word", ["ab", "toolongword", "Hello", "héllo", ""])
def test_a_word_the_task_does_not_know_is_refused_with_the_reason(word):
    with pytest.raises(ValueError, match="letters"):
        example_attention(fresh_model(SORTER, seed=0), SORTER.task, word)
