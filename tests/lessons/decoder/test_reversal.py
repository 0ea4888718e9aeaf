"""The reverser lesson: one word through the shipped encoder-decoder, its three attentions, and its answer
written one greedy token at a time.

Measured on the shipped weights with the page's default word "decoder" (S = 7 letters, T = 8 decoder
positions): both heads read source position 6, 5, 4, 3, 2, 1, 0 at the seven letter steps (7 of 7), with an
average weight of 0.988 (head 0) and 0.958 (head 1) on that mirrored letter; the <eos> step reads position 0.
"""

from __future__ import annotations

import pytest
import torch

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.generation import seq2seq_generation_steps
from anatomy.training.recipes import HELD_OUT_SEED, RECIPES
from anatomy.training.tasks import BOS, EOS
from lessons.decoder.reversal import check_word, describe_characters, reverse_word

pytestmark = pytest.mark.usefixtures("no_autograd", "one_thread")

WORD = "decoder"


@pytest.fixture(scope="module")
def reverser():
    return load_pretrained(str(RECIPES["reverser"].folder), device="cpu")


@pytest.fixture(scope="module")
def lesson(reverser):
    return reverse_word(reverser.model, reverser.task, WORD)


@pytest.fixture(scope="module")
def held_out(reverser):
    return reverser.task.sample_words(40, torch.Generator().manual_seed(HELD_OUT_SEED))


@pytest.mark.slow
def test_cross_attention_is_rectangular_t_by_s_and_each_row_sums_to_one(lesson):
    assert lesson.cross_attention.shape == (2, 8, 7)  # (H, T, S): 8 decoder steps, 7 letters
    assert torch.allclose(lesson.cross_attention.sum(dim=-1), torch.ones(2, 8), atol=1e-6)
    assert (lesson.cross_attention > 0).all()  # no mask: every letter gets some weight


def test_decoder_self_attention_is_zero_above_the_diagonal_and_rows_sum_to_one(lesson):
    weights = lesson.decoder_attention
    assert weights.shape == (2, 8, 8)
    assert (weights.triu(diagonal=1) == 0.0).all()  # exactly 0: the causal mask
    allowed = torch.ones(8, 8, dtype=torch.bool).tril()
    assert (weights[0][allowed] > 0).all()  # head 0 reads all of the past (min 2.4e-4)
    assert torch.allclose(weights.sum(dim=-1), torch.ones(2, 8), atol=1e-6)
    assert weights[:, 0, 0].tolist() == [1.0, 1.0]  # <bos> can read only itself


def test_encoder_self_attention_has_no_mask_and_reads_in_both_directions(lesson):
    weights = lesson.encoder_attention
    assert lesson.encoder_mask is None
    assert weights.shape == (2, 7, 7)
    after, before = torch.ones(7, 7, dtype=torch.bool).triu(1), torch.ones(7, 7, dtype=torch.bool).tril(-1)
    assert (weights[:, after] > 0).all() and (weights[:, before] > 0).all()  # later and earlier letters alike
    assert torch.allclose(weights.sum(dim=-1), torch.ones(2, 7), atol=1e-6)


def test_the_default_word_is_reversed_step_by_step_with_the_decoder_fed_its_own_tokens(lesson):
    assert lesson.answer == "redoced" == lesson.expected and lesson.correct
    assert lesson.written == ("r", "e", "d", "o", "c", "e", "d", EOS)
    assert lesson.target_tokens == (BOS, "r", "e", "d", "o", "c", "e", "d")  # <bos>, then all but <eos>
    for step in lesson.steps:
        assert step.inputs == lesson.target_tokens[: step.index + 1]


def test_each_step_writes_its_most_probable_token_and_reports_its_probability(lesson, reverser):
    vocabulary = reverser.task.tokenizer.tokens
    assert lesson.probabilities.shape == (8, 30)  # (T, V)
    for step in lesson.steps:
        assert step.probabilities.shape == (30,)
        assert step.probabilities.sum().item() == pytest.approx(1.0, abs=1e-6)
        assert vocabulary[int(step.probabilities.argmax())] == step.token == vocabulary[step.token_id]
        assert step.probability == pytest.approx(step.probabilities.max().item(), abs=1e-7)
        assert step.probability > 0.99 > 0.01 > step.runner_up_probability  # measured ≥ 0.99997 vs ≤ 1e-5
        assert step.runner_up != step.token


def test_each_step_row_is_the_row_of_the_final_pass_because_the_decoder_is_causal(lesson):
    for step in lesson.steps:
        assert torch.allclose(step.cross_attention, lesson.cross_attention[:, step.index], atol=1e-6)
        assert step.most_read == tuple(lesson.alignment[:, step.index].tolist())


def test_every_letter_step_reads_the_mirrored_source_position_most(lesson):
    assert lesson.mirrored_positions.tolist() == [6, 5, 4, 3, 2, 1, 0]
    assert lesson.alignment.tolist() == [[6, 5, 4, 3, 2, 1, 0, 0], [6, 5, 4, 3, 2, 1, 0, 0]]
    assert lesson.mirrored_hits == (7, 7)
    assert lesson.weight_on_mirror.shape == (2, 7)
    assert (lesson.weight_on_mirror > 0.9).all()  # measured ≥ 0.906
    assert lesson.has_repeated_letters  # d and e twice: read by position


def test_generation_equals_task_predict_on_held_out_words(reverser, held_out):
    lessons = [reverse_word(reverser.model, reverser.task, word) for word in held_out]
    assert [lesson.answer for lesson in lessons] == reverser.task.predict(reverser.model, held_out)
    assert all(lesson.correct for lesson in lessons)
    hits = sum(sum(lesson.mirrored_hits) for lesson in lessons)
    letter_steps = 2 * sum(len(word) for word in held_out)
    assert hits >= 0.95 * letter_steps, (hits, letter_steps)


def test_an_untrained_model_that_never_writes_eos_stops_where_predict_stops(reverser):
    untrained = RECIPES["reverser"].build().eval()
    lesson = reverse_word(untrained, reverser.task, "hello")
    assert lesson.answer == reverser.task.predict(untrained, ["hello"])[0]
    assert len(lesson.steps) <= reverser.task.max_length + 1 == 9
    assert len(lesson.target_tokens) == len(lesson.steps) == lesson.cross_attention.shape[1]


def test_the_shared_model_is_only_read(reverser):
    before = {name: tensor.clone() for name, tensor in reverser.model.state_dict().items()}
    reverse_word(reverser.model, reverser.task, "shared")
    after = reverser.model.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)
    assert not reverser.model.training


@pytest.mark.parametrize(
    ("entry", "word", "lowercased"),
    [
        ("hello", "hello", False),
        ("  hello ", "hello", False),
        ("HeLLo", "hello", True),
        ("abc", "abc", False),
        ("abcdefgh", "abcdefgh", False),
    ],
)
def test_a_word_of_3_to_8_letters_is_accepted_capitals_lowercased(reverser, entry, word, lowercased):
    checked = check_word(reverser.task, entry)
    assert (checked.word, checked.problem, checked.lowercased) == (word, None, lowercased)


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("", "Type a word of 3 to 8 letters"),
        ("   \n\t ", "Type a word of 3 to 8 letters"),
        ("hi", "words of 3 to 8 letters; this one has 2"),
        ("attention", "this one has 9"),
        ("hello1", "also holds “1”"),
        ("a b", "also holds a space"),
        ("héllo", "also holds “é”"),
        ("😍😍😍", "also holds “😍”"),
        ("<b>x</b>", "also holds “/”, “<”, “>”"),
    ],
)
def test_anything_but_a_word_of_3_to_8_letters_gets_a_reason(reverser, entry, reason):
    checked = check_word(reverser.task, entry)
    assert checked.word == "" and reason in checked.problem


def test_a_long_list_of_unknown_characters_is_cut_short():
    assert describe_characters("0123456789") == "“0”, “1”, “2”, “3”, “4”, “5”, 4 other characters"
    assert describe_characters(" \t") == "a space, a tab"


def test_the_lesson_records_the_steps_of_the_one_generation_loop(reverser):
    model, tokenizer = reverser.model, reverser.task.tokenizer
    # The lesson is made here, on the test's one thread like the steps it is compared with, not taken from the
    # module's fixture (made before the test's thread count is set): on an AVX-512 CPU a matrix product rounds
    # its last bit differently on one thread and on two.
    lesson = reverse_word(model, reverser.task, WORD)
    memory = model.encode(torch.tensor([reverser.task.source(WORD)]), trace=True).last_hidden_state  # as the lesson
    start_ids = torch.tensor([[tokenizer.bos_id]])
    steps = list(seq2seq_generation_steps(model, memory, start_ids, 9, trace=True, stop_token_ids={tokenizer.eos_id}))
    assert [recorded.token_id for recorded in lesson.steps] == [int(step.chosen_ids) for step in steps]
    for recorded, step in zip(lesson.steps, steps, strict=True):
        assert recorded.inputs == tuple(tokenizer.decode(step.sequence[0].tolist()))
        assert torch.equal(recorded.probabilities, step.logits[0].softmax(dim=-1))
        cross_attention = step.recorded_trace.layers[-1].cross_attention
        assert cross_attention is not None and torch.equal(recorded.cross_attention, cross_attention.weights[0, :, -1])
    last_cross_attention = steps[-1].recorded_trace.layers[-1].cross_attention
    assert last_cross_attention is not None and torch.equal(lesson.cross_attention, last_cross_attention.weights[0])
