"""lessons.causal.decoding: greedy generation step by step, teacher forcing, weight on the future, and a GPT-2's next
tokens, proven against the models' own generation, the training loss, and transformers' GPT2LMHeadModel.

Measured on the shipped models with the word "banana": the sorter writes aaabnn, every step at p ≥ 0.976;
the cheater writes annnnan. Teacher-forced on the true sequence, the cheater's heads put 71 %, 94 %, 47 % and
54 % of a query's weight on the future (the sorter's: exactly 0), and its loss on the answer's letters is
8.3e-8 against the sorter's 4.9e-3.
"""

from __future__ import annotations

import pytest
import torch

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.generation import generation_steps
from anatomy.training.loop import teacher_forced_loss
from anatomy.training.recipes import HELD_OUT_SEED, RECIPES
from lessons.causal import decoding
from tests.tiny_models import GPT2_POSITIONS, GPT2_TEXT, save_tiny_gpt2

pytestmark = pytest.mark.usefixtures("no_autograd", "one_thread")

TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def sorter():
    return load_pretrained(str(RECIPES["sorter"].folder), device="cpu")


@pytest.fixture(scope="module")
def cheater():
    return load_pretrained(str(RECIPES["sorter-cheater"].folder), device="cpu")


@pytest.fixture(scope="module")
def banana(sorter, cheater):
    return {
        name: decoding.walk_through_sorting(model.model, model.task, "banana")
        for name, model in (("sorter", sorter), ("cheater", cheater))
    }


# --- Generation ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_sorter_writes_banana_sorted_one_confident_token_at_a_time(banana):
    walk = banana["sorter"]
    assert walk.written == walk.expected == "aaabnn" and walk.correct
    assert len(walk.generation.steps) == 7  # 6 letters, then <eos>
    assert [len(step.read_ids) for step in walk.generation.steps] == list(range(8, 15))
    assert min(step.chosen_probability for step in walk.generation.steps) > 0.97  # measured 0.976
    assert walk.generation.step_probabilities.shape == (7, 30)
    assert torch.allclose(walk.generation.step_probabilities.sum(dim=-1), torch.ones(7, dtype=torch.float64))


@pytest.mark.parametrize("word", ["banana", "hello", "zyxwvuts", "aaa"])
def test_step_by_step_generation_writes_exactly_what_generate_greedy_writes(sorter, cheater, word):
    for model in (sorter.model, cheater.model):
        generation = decoding.generate_greedily(model, sorter.task.prompt(word), len(word) + 1)
        prompt = torch.tensor([sorter.task.prompt(word)])
        assert list(generation.sequence_ids) == model.generate_greedy(prompt, len(word) + 1)[0].tolist()


def test_step_by_step_generation_records_the_steps_of_the_one_generation_loop(sorter):
    eos, prompt = sorter.task.tokenizer.eos_id, sorter.task.prompt("banana")
    generation = decoding.generate_greedily(sorter.model, prompt, 9, stop_id=eos)
    steps = list(generation_steps(sorter.model, torch.tensor([prompt]), 9, trace=True, stop_token_ids={eos}))
    assert len(generation.steps) == len(steps) == 7  # a a a b n n <eos>
    for recorded, step in zip(generation.steps, steps, strict=True):
        assert recorded.read_ids == tuple(step.sequence[0].tolist()) and recorded.chosen_id == int(step.chosen_ids)
        assert torch.equal(recorded.probabilities, step.logits[0].double().log_softmax(dim=-1).exp())
        assert torch.equal(recorded.attention, step.recorded_trace.attention_weights[:, 0])


def test_each_steps_probabilities_are_the_softmax_of_that_steps_last_logits(sorter, banana):
    for step in banana["sorter"].generation.steps:
        logits = sorter.model(torch.tensor([step.read_ids])).logits[0, -1]
        assert (step.probabilities - logits.double().softmax(dim=-1)).abs().max() <= 1e-6
        assert step.chosen_id == int(logits.argmax())
        first, second = step.candidates(2)
        assert first.token_id == step.chosen_id and first.probability >= second.probability


def test_writing_the_stop_token_ends_the_generation(sorter):
    eos = sorter.task.tokenizer.eos_id
    generation = decoding.generate_greedily(sorter.model, sorter.task.prompt("abc"), 9, stop_id=eos)
    assert generation.generated_ids[-1] == eos and len(generation.steps) == 4  # a b c <eos>


def test_a_generation_that_would_outgrow_the_positions_is_refused(sorter):
    with pytest.raises(ValueError, match="19 positions"):
        decoding.generate_greedily(sorter.model, sorter.task.prompt("abcdefgh"), 11)  # 10 + 11 − 1 > 19


def test_with_the_mask_a_new_token_never_changes_the_earlier_rows_without_it_they_move(banana):
    assert decoding.largest_change_of_earlier_rows(banana["sorter"].generation) <= 1e-6
    assert decoding.largest_change_of_earlier_rows(banana["cheater"].generation) > 0.1


def test_the_cheater_cannot_write_the_answer_it_reads_so_well(banana):
    assert banana["cheater"].written == "annnnan" and not banana["cheater"].correct


# --- Teacher forcing and the future -------------------------------------------------------------------


@pytest.mark.parametrize("word", ["banana", "hello", "abcdefgh"])
def test_teacher_forced_loss_equals_the_training_loss_of_the_word_alone(sorter, cheater, word):
    for model in (sorter.model, cheater.model):
        forced = decoding.teacher_force(model, sorter.task.sequence(word), first_scored=len(word) + 1)
        expected = teacher_forced_loss(model, sorter.task.batch([word])).item()
        # ours is float64 from the logits, the training loss float32: −log p near 0 is good to ~1e-7 there
        assert forced.loss == pytest.approx(expected, rel=1e-4, abs=2e-7)


def test_the_sorter_puts_exactly_zero_weight_above_the_diagonal_in_every_head(banana):
    forced, generated = banana["sorter"].teacher_forced.attention, banana["sorter"].generation.final_attention
    assert forced.shape == (2, 2, 14, 14) and generated.shape == (2, 2, 14, 14)
    assert torch.all(decoding.weight_above_diagonal(forced) == 0.0)
    assert torch.all(decoding.weight_above_diagonal(generated) == 0.0)


def test_the_cheater_puts_a_third_or_more_of_every_heads_weight_above_the_diagonal(banana):
    future = decoding.mean_weight_above_diagonal(banana["cheater"].teacher_forced.attention)  # (L, H)
    assert future.shape == (2, 2)
    assert future.min() > 0.4 and future.max() > 0.9, future  # measured .71 .94 / .47 .54


def test_a_cheater_head_reads_the_very_token_it_must_predict_at_every_answer_position(banana):
    forced = banana["cheater"].teacher_forced
    queries = decoding.answer_queries("banana", len(forced.input_ids))
    assert queries == range(7, 13)
    shares = decoding.strongest_key_is_next_position(forced.attention, queries)
    assert shares.max() == 1.0  # 6 of 6 positions look at t + 1
    honest = decoding.strongest_key_is_next_position(banana["sorter"].teacher_forced.attention, queries)
    assert honest.max() == 0.0  # the mask hides t + 1


def test_the_cheater_is_nearly_certain_of_every_letter_yet_misses_the_end_of_the_word(banana):
    honest, cheater = banana["sorter"].teacher_forced, banana["cheater"].teacher_forced
    letters = range(7, 13)
    assert cheater.loss_at(letters) < 1e-6 < honest.loss_at(letters)  # measured 8.3e-8 vs 4.9e-3
    assert cheater.loss_at(letters) < 1e-3 * honest.loss_at(letters)
    assert cheater.predicted_ids[7:13] == cheater.target_ids[7:13]
    assert float(cheater.target_probabilities[-1]) < 0.01 < 0.99 < float(honest.target_probabilities[-1])
    assert torch.allclose(cheater.target_probabilities, (-cheater.target_losses).exp())


def test_a_layer_1_sorter_head_looks_at_the_letter_it_writes_next(sorter):
    walk = decoding.walk_through_sorting(sorter.model, sorter.task, "hello")
    attention = walk.generation.final_attention
    queries = decoding.answer_queries("hello", attention.size(-1))
    shares = decoding.strongest_key_holds_next_token(
        attention, walk.generation.sequence_ids, queries, decoding.word_positions("hello")
    )
    assert shares[1].tolist() == [1.0, 1.0]  # e, h, l, l, o: 5 of 5 in both heads


def test_on_200_held_out_words_layer_1_heads_look_at_the_next_letter_at_93_and_82_percent_of_steps(sorter):
    """The figures the page quotes beside the sorter's heads."""
    words = sorter.task.sample_words(200, torch.Generator().manual_seed(HELD_OUT_SEED))
    shares = torch.stack(
        [
            decoding.strongest_key_holds_next_token(
                forced.attention,
                sorter.task.sequence(word),
                decoding.answer_queries(word, len(forced.input_ids)),
                decoding.word_positions(word),
            )
            for word in words
            for forced in [decoding.teacher_force(sorter.model, sorter.task.sequence(word), len(word) + 1)]
        ]
    ).mean(dim=0)
    assert shares[1].tolist() == pytest.approx([0.93, 0.82], abs=0.005)
    assert shares[0].max() < 0.5  # layer 0 does not do this lookup


def test_weight_above_diagonal_on_a_matrix_worked_by_hand():
    weights = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]])
    assert decoding.weight_above_diagonal(weights).tolist() == pytest.approx([0.5, 0.3, 0.0])
    assert float(decoding.mean_weight_above_diagonal(weights)) == pytest.approx(0.4)  # (0.5 + 0.3) / 2


def test_strongest_key_measures_count_only_what_they_say_worked_by_hand():
    # ids: 0 5 6 | 9 5   queries 2 and 3 predict ids 9 and 5; keys 1..2 are "the word"
    ids = [0, 5, 6, 9, 5]
    weights = torch.zeros(1, 2, 5, 5)
    weights[0, 0, 2, 3] = weights[0, 0, 3, 1] = 1.0  # head 0: query 2 -> key 3 (next position), 3 -> key 1
    weights[0, 1, 2, 0] = weights[0, 1, 3, 4] = 1.0  # head 1: query 2 -> key 0, query 3 -> key 4 (outside)
    holds = decoding.strongest_key_holds_next_token(weights, ids, range(2, 4), range(1, 3))
    assert holds.tolist() == [[0.5, 0.0]]  # head 0, query 3: key 1 holds 5 = ids[4]
    assert decoding.strongest_key_is_next_position(weights, range(2, 4)).tolist() == [[0.5, 0.5]]


def test_top_candidates_are_the_most_probable_first_and_k_is_capped_at_the_vocabulary():
    probabilities = torch.tensor([0.1, 0.6, 0.05, 0.25])
    assert [(c.token_id, c.probability) for c in decoding.top_candidates(probabilities, 2)] == [
        (1, pytest.approx(0.6)),
        (3, pytest.approx(0.25)),
    ]
    assert len(decoding.top_candidates(probabilities, 20)) == 4


@pytest.mark.parametrize(
    ("word", "reason"),
    [
        ("", "letters \\(got 0\\)"),
        ("ab", "letters \\(got 2\\)"),
        ("abcdefghi", "letters \\(got 9\\)"),
        ("abc1", "only the letters .* are known \\(not 1\\)"),
        ("Banana", "only the letters .* are known \\(not B\\)"),
        ("été", "only the letters .* are known \\(not é\\)"),
    ],
)
def test_a_word_the_task_rejects_is_refused_before_the_model_runs(sorter, word, reason, monkeypatch):
    def no_model_run(*args, **kwargs):
        raise AssertionError("the model ran on a word the task refuses")

    monkeypatch.setattr(sorter.model, "forward", no_model_run)
    with pytest.raises(ValueError, match=reason):
        decoding.walk_through_sorting(sorter.model, sorter.task, word)


def test_nothing_is_stored_on_the_shared_model(sorter, banana):
    before = {name: tensor.clone() for name, tensor in sorter.model.state_dict().items()}
    decoding.walk_through_sorting(sorter.model, sorter.task, "zebra")
    assert not sorter.model.training
    assert all(torch.equal(before[name], tensor) for name, tensor in sorter.model.state_dict().items())


# --- A GPT-2 on a text ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_gpt2_folder(tmp_path_factory):
    return save_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2-bpe"))


@pytest.fixture(scope="module")
def tiny_gpt2(tiny_gpt2_folder):
    return load_pretrained(str(tiny_gpt2_folder), device="cpu")


@pytest.fixture(scope="module")
def reference_gpt2(tiny_gpt2_folder):
    from transformers import GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained(str(tiny_gpt2_folder), attn_implementation="eager")
    return model.eval().requires_grad_(False)


def test_the_tiny_gpt2_loads_as_a_decoder_with_its_byte_level_tokenizer(tiny_gpt2):
    assert tiny_gpt2.family == "decoder" and tiny_gpt2.tokenizer is not None
    tokens = tiny_gpt2.tokenizer.tokenize("fruit flies")
    assert any(token.startswith("Ġ") for token in tokens[1:])  # the space rides on the next word
    assert tiny_gpt2.tokenizer.convert_tokens_to_string(tokens) == "fruit flies"


def test_read_text_attends_and_predicts_exactly_like_gpt2_lm_head_model(tiny_gpt2, reference_gpt2):
    run = decoding.read_text(tiny_gpt2.model, tiny_gpt2.tokenizer, GPT2_TEXT)
    input_ids = torch.tensor([run.tokenized.input_ids])
    expected = reference_gpt2(input_ids, output_attentions=True)
    num_tokens = len(run.tokenized)
    for layer, weights in enumerate(expected.attentions):
        ours = decoding.text_attention(tiny_gpt2.model, run, layer).weights[0]  # (H, T, T)
        assert ours.shape == (2, num_tokens, num_tokens)
        assert (ours - weights[0]).abs().max() <= TOLERANCE
        assert torch.all(decoding.weight_above_diagonal(ours) == 0.0)
    softmax = expected.logits[0, -1].double().softmax(dim=-1)
    assert (run.next_token_probabilities - softmax).abs().max() <= TOLERANCE
    top = run.candidates(10)
    assert top[0].probability > 0.05  # a peaked, not uniform, guess
    assert [candidate.token_id for candidate in top] == softmax.topk(10).indices.tolist()
    assert [candidate.probability for candidate in top] == pytest.approx(
        softmax.topk(10).values.tolist(), abs=TOLERANCE
    )


def test_read_text_cuts_a_long_text_at_the_models_positions(tiny_gpt2):
    run = decoding.read_text(tiny_gpt2.model, tiny_gpt2.tokenizer, GPT2_TEXT * 10)
    assert len(run.tokenized) == GPT2_POSITIONS and run.tokenized.truncated
    assert run.tokenized.untruncated_length > GPT2_POSITIONS
    capped = decoding.read_text(tiny_gpt2.model, tiny_gpt2.tokenizer, GPT2_TEXT * 10, max_tokens=12)
    assert len(capped.tokenized) == 12 and decoding.text_attention(tiny_gpt2.model, capped, 0).weights.shape[-1] == 12


def test_read_text_refuses_a_text_that_makes_no_tokens(tiny_gpt2):
    with pytest.raises(ValueError, match="no tokens"):
        decoding.read_text(tiny_gpt2.model, tiny_gpt2.tokenizer, "")
