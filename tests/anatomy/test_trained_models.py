"""The models that ship in anatomy/checkpoints/trained: they load like any checkpoint, they solve their tasks on
held-out words, the cheater shows why the causal mask exists, the sorter runs identically in transformers, and the
reverser's cross-attention is the alignment.

Held-out words come from HELD_OUT_SEED; the recipes train on other seeds. Measured on the shipped files
(500 words each): sorter 100 % exact, reverser 100 %, cheater 0 %; teacher-forced loss sorter 3.6e-4,
cheater 3.4e-8; both reverser heads put their largest weight on source position S − 1 − t for every step.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.checkpoints.saving import save_trained
from anatomy.models import DecoderOnlyLM
from anatomy.seq2seq import EncoderDecoder
from anatomy.training.loop import teacher_forced_loss
from anatomy.training.recipes import HELD_OUT_SEED, RECIPES
from anatomy.training.tasks import IGNORE_INDEX, exact_match_rate

pytestmark = pytest.mark.usefixtures("no_autograd", "one_thread")

HELD_OUT = 500


@pytest.fixture(scope="module")
def shipped():
    return {name: load_pretrained(str(recipe.folder), device="cpu") for name, recipe in RECIPES.items()}


def held_out_words(task, count: int = HELD_OUT) -> list[str]:
    return task.sample_words(count, torch.Generator().manual_seed(HELD_OUT_SEED))


def accuracy(pretrained, words) -> float:
    task = pretrained.task
    return exact_match_rate(task.predict(pretrained.model, words), [task.answer(word) for word in words])


@pytest.fixture(scope="module")
def sorting_words(shipped):
    return held_out_words(shipped["sorter"].task)


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_each_shipped_model_is_a_small_safetensors_checkpoint_built_from_its_recipe(shipped, name):
    folder = RECIPES[name].folder
    assert sorted(path.name for path in folder.iterdir()) == ["config.json", "model.safetensors"]
    assert (folder / "model.safetensors").stat().st_size < 500_000
    assert shipped[name].config == RECIPES[name].config
    assert shipped[name].task == RECIPES[name].task
    assert shipped[name].tokenizer is None  # no transformers tokenizer: the task carries the vocabulary


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_each_shipped_config_json_is_what_saving_its_model_writes_and_it_loads_back_equal(shipped, name, tmp_path):
    shipped_json = json.loads((RECIPES[name].folder / "config.json").read_text())
    written = save_trained(shipped[name].model, shipped[name].task, tmp_path / name)
    assert json.loads((written / "config.json").read_text()) == shipped_json
    assert load_pretrained(str(written), device="cpu").config == shipped[name].config == RECIPES[name].config


def test_the_decoders_are_gpt2_checkpoints_and_only_the_cheater_is_unmasked(shipped):
    for name, causal in [("sorter", True), ("sorter-cheater", False)]:
        raw = json.loads((RECIPES[name].folder / "config.json").read_text())
        assert raw["model_type"] == "gpt2" and raw["anatomy_causal"] is causal
        assert isinstance(shipped[name].model, DecoderOnlyLM) and shipped[name].family == "decoder"
        assert shipped[name].config.causal is causal
    assert isinstance(shipped["reverser"].model, EncoderDecoder)
    assert shipped["reverser"].family == "encoder-decoder"


def test_the_sorter_sorts_at_least_99_percent_of_held_out_words_exactly(shipped, sorting_words):
    assert accuracy(shipped["sorter"], sorting_words) >= 0.99
    assert shipped["sorter"].task.predict(shipped["sorter"].model, ["hello", "banana"]) == ["ehllo", "aaabnn"]


def test_the_sorter_sorts_eight_letter_words_it_cannot_have_memorised(shipped):
    """26^8 ≈ 2·10^11 eight-letter words against 256 000 training examples: this is the algorithm."""
    eight_letters = replace(shipped["sorter"].task, min_length=8)
    assert accuracy(replace(shipped["sorter"], task=eight_letters), held_out_words(eight_letters)) >= 0.99


def test_the_reverser_reverses_at_least_99_percent_of_held_out_words_exactly(shipped):
    assert accuracy(shipped["reverser"], held_out_words(shipped["reverser"].task)) >= 0.99
    assert shipped["reverser"].task.predict(shipped["reverser"].model, ["reversed", "abc"]) == ["desrever", "cba"]


def test_the_cheater_reads_the_answer_in_training_and_fails_when_it_must_write_it(shipped, sorting_words):
    task = shipped["sorter"].task
    batch = task.batch(sorting_words)
    honest_loss = teacher_forced_loss(shipped["sorter"].model, batch).item()
    cheater_loss = teacher_forced_loss(shipped["sorter-cheater"].model, batch).item()
    assert cheater_loss < 1e-6 < honest_loss and cheater_loss < 0.01 * honest_loss  # 3.4e-8 vs 3.6e-4
    honest_accuracy = accuracy(shipped["sorter"], sorting_words)
    cheater_accuracy = accuracy(shipped["sorter-cheater"], sorting_words)
    assert cheater_accuracy < 0.2 and honest_accuracy >= 0.99  # 0 % vs 100 %


def test_the_cheaters_heads_look_ahead_and_the_honest_heads_never_do(shipped, sorting_words):
    batch = shipped["sorter"].task.batch(sorting_words)
    for name in ("sorter", "sorter-cheater"):
        attentions = shipped[name].model(**batch.inputs, trace=True).attentions
        future_weight = [weights.triu(diagonal=1).sum(dim=-1).mean().item() for weights in attentions]
        if name == "sorter":
            assert all(torch.all(weights.triu(diagonal=1) == 0.0) for weights in attentions)
        else:  # on average a third or more of every query's weight lands on a future token
            assert min(future_weight) > 0.3, future_weight  # measured 0.57 and 0.37


def test_a_cheater_head_reads_the_very_token_it_is_asked_to_predict(shipped, sorting_words):
    """At answer positions, one first-block head of the cheater puts its largest weight on position t + 1,
    which holds the answer under teacher forcing (measured: 97 % of those positions)."""
    batch = shipped["sorter"].task.batch(sorting_words)
    scored = batch.targets != IGNORE_INDEX
    first_block = shipped["sorter-cheater"].model(**batch.inputs, trace=True).attentions[0]  # (B, H, T, T)
    next_position = torch.arange(first_block.size(-1)) + 1  # (T,)
    shares = [
        (first_block[:, head].argmax(dim=-1) == next_position)[scored].float().mean().item()
        for head in range(first_block.size(1))
    ]
    assert max(shares) >= 0.9, shares


def test_the_sorter_attends_to_the_letter_it_is_about_to_write(shipped, sorting_words):
    """At each answer step, some head of the last block puts its largest weight on a position of the
    scrambled word that holds exactly the letter the model writes next: the heart of the algorithm."""
    model, task = shipped["sorter"].model, shipped["sorter"].task
    batch = task.batch(sorting_words)
    input_ids = batch.inputs["input_ids"]
    attentions = model(**batch.inputs, trace=True).attentions
    letters = (batch.targets != IGNORE_INDEX) & (batch.targets != task.tokenizer.eos_id)  # (B, T)
    word_end = torch.tensor([len(word) for word in sorting_words])[:, None]  # letters at 1..len
    shares = []
    for head in range(attentions[-1].size(1)):
        looked_at = attentions[-1][:, head].argmax(dim=-1)  # (B, T) key index
        in_word = (looked_at >= 1) & (looked_at <= word_end)
        holds_next = input_ids.gather(1, looked_at) == batch.targets
        shares.append((in_word & holds_next)[letters].float().mean().item())
    assert max(shares) >= 0.9, shares


def test_the_shipped_sorter_runs_identically_in_transformers_gpt2(shipped, sorting_words):
    from transformers import GPT2LMHeadModel

    folder = str(RECIPES["sorter"].folder)
    reference = GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
    ours, task = shipped["sorter"].model, shipped["sorter"].task
    input_ids = task.batch(sorting_words).inputs["input_ids"]
    mine, theirs = ours(input_ids), reference(input_ids, output_hidden_states=True)
    assert (mine.last_hidden_state - theirs.hidden_states[-1]).abs().max().item() <= 1e-5  # measured 4.8e-6
    # A trained model is confident: logits reach ±20, where one float32 step is 2e-6. Measured: at most
    # 1.5e-5 apart, so the tolerance is 1e-5 plus 1e-5 of each logit's size.
    assert theirs.logits.abs().max() > 10
    torch.testing.assert_close(mine.logits, theirs.logits, rtol=1e-5, atol=1e-5)
    for length in (3, 5, 8):
        words = [word for word in sorting_words if len(word) == length][:16]
        prompts = torch.tensor([task.prompt(word) for word in words])
        # Past <eos> where the 19 positions allow (eos_token_id=None): continuations must agree even where
        # they are nonsense.
        new_tokens = min(length + 4, ours.config.max_positions - prompts.size(1))
        expected = reference.generate(
            prompts,
            attention_mask=torch.ones_like(prompts),
            do_sample=False,
            max_new_tokens=new_tokens,
            eos_token_id=None,
            pad_token_id=0,
        )
        assert ours.generate_greedy(prompts, max_new_tokens=new_tokens).tolist() == expected.tolist()


def test_each_reverser_output_step_reads_the_mirrored_source_letter(shipped):
    """Target step t (predicting the t-th letter of the reversal) puts its largest cross-attention weight
    on source position S − 1 − t, the anti-diagonal, in every head, for at least 95 % of the steps."""
    model, task = shipped["reverser"].model, shipped["reverser"].task
    words = held_out_words(task)
    batch = task.batch(words)
    (weights,) = model(**batch.inputs, trace=True).cross_attentions  # one decoder block
    assert weights.shape == (HELD_OUT, 2, 9, 8)  # (B, H, T, S): rectangular
    steps = [(row, t, len(word) - 1 - t) for row, word in enumerate(words) for t in range(len(word))]
    rows, targets, sources = (torch.tensor(column) for column in zip(*steps))
    for head in range(weights.size(1)):
        step_weights = weights[rows, head, targets]  # (steps, S)
        hits = (step_weights.argmax(dim=-1) == sources).float().mean().item()
        weight_on_mirror = step_weights[torch.arange(len(steps)), sources].mean().item()
        assert hits >= 0.95 and weight_on_mirror >= 0.9, (head, hits, weight_on_mirror)
