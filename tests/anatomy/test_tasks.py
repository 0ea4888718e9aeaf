"""The algorithmic tasks: vocabulary, sequence layouts, what is scored, seeded examples, and exact matching."""

from __future__ import annotations

import pytest
import torch

from anatomy.training.tasks import (
    IGNORE_INDEX,
    SPECIAL_TOKENS,
    CharacterTokenizer,
    ReversalTask,
    SortingTask,
    exact_match_rate,
    task_from_dict,
)

SORTING = SortingTask(alphabet="abcdefgh", min_length=3, max_length=6, distinct=False)
REVERSAL = ReversalTask(alphabet="abcdefgh", min_length=2, max_length=5)


def words_from(task, seed: int, count: int = 200) -> list[str]:
    return task.sample_words(count, torch.Generator().manual_seed(seed))


def test_the_vocabulary_is_four_special_tokens_then_one_token_per_letter():
    tokenizer = SORTING.tokenizer
    assert tokenizer.tokens == ("<pad>", "<bos>", "<eos>", "=", *"abcdefgh")
    assert (tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id, tokenizer.separator_id) == (0, 1, 2, 3)
    assert tokenizer.encode("bad") == [5, 4, 7]
    assert tokenizer.decode([1, 5, 4, 7, 2]) == ["<bos>", "b", "a", "d", "<eos>"]


def test_a_letter_outside_the_alphabet_is_refused_by_name():
    with pytest.raises(ValueError, match="'z' is not in the vocabulary abcdefgh"):
        SORTING.tokenizer.encode("az")
    with pytest.raises(ValueError, match="every token"):
        CharacterTokenizer(("a", "a"))


def test_a_sorting_sequence_is_the_word_then_equals_then_the_sorted_word():
    tokens = SORTING.tokenizer.decode(SORTING.sequence("dbca"))
    assert tokens == ["<bos>", "d", "b", "c", "a", "=", "a", "b", "c", "d", "<eos>"]
    assert SORTING.tokenizer.decode(SORTING.prompt("dbca")) == tokens[:6]
    assert SORTING.answer("hebbac") == "abbceh"


def test_sorting_batches_score_exactly_the_answer_letters_and_the_final_eos():
    words = ["dbca", "hgfedc", "bab"]
    batch = SORTING.batch(words)
    input_ids, targets = batch.inputs["input_ids"], batch.targets
    assert input_ids.shape == targets.shape == (3, 2 * 6 + 2)  # longest sequence minus one
    scored = targets != IGNORE_INDEX
    assert scored.sum(dim=1).tolist() == [len(word) + 1 for word in words]  # the answer and <eos>
    first = SORTING.tokenizer.decode(targets[0][scored[0]].tolist())
    assert first == ["a", "b", "c", "d", "<eos>"]
    # The first scored position is the `=` token: the prediction made right after reading the whole word.
    assert input_ids[0, scored[0].nonzero()[0]].item() == SORTING.tokenizer.separator_id
    attention_mask = batch.inputs["attention_mask"].bool()
    assert attention_mask[scored].all()  # every scored position is real
    assert not attention_mask[input_ids == SORTING.tokenizer.pad_id].any()  # padding is hidden
    assert attention_mask.sum(dim=1).tolist() == [11, 14, 9]  # 2·len + 3 tokens, cut at 14


def test_a_reversal_batch_has_a_padded_source_and_a_target_from_bos_to_eos():
    batch = REVERSAL.batch(["abc", "hgfed"])
    tokenizer = REVERSAL.tokenizer
    assert batch.inputs["source_ids"].tolist()[0] == tokenizer.encode("abc") + [tokenizer.pad_id] * 2
    assert batch.inputs["source_mask"].tolist() == [[1, 1, 1, 0, 0], [1] * 5]
    assert tokenizer.decode(batch.inputs["target_ids"][1].tolist()) == ["<bos>", *"defgh"]
    assert tokenizer.decode(batch.targets[1].tolist()) == [*"defgh", "<eos>"]
    assert batch.targets[0].tolist()[-2:] == [IGNORE_INDEX, IGNORE_INDEX]  # padding is never scored


def test_one_seed_always_gives_the_same_words_and_another_seed_other_words():
    assert words_from(SORTING, 7) == words_from(SORTING, 7)
    assert len(set(words_from(SORTING, 7)) & set(words_from(SORTING, 8))) < 20


def test_sampled_words_respect_length_alphabet_and_distinctness():
    words = words_from(SORTING, 1, count=1000)
    assert {len(word) for word in words} == {3, 4, 5, 6}
    assert set("".join(words)) == set("abcdefgh")
    assert any(len(set(word)) < len(word) for word in words)  # repeats allowed here
    distinct = SortingTask(alphabet="abcdefgh", distinct=True)
    assert all(len(set(word)) == len(word) for word in words_from(distinct, 1, count=1000))


def test_check_explains_why_a_word_does_not_fit_the_task():
    SORTING.check("cab")
    for word, reason in [("ab", "3 to 6 letters"), ("abcz", "only the letters"), ("abcdefgh", "got 8")]:
        with pytest.raises(ValueError, match=reason):
            SORTING.check(word)
    with pytest.raises(ValueError, match="twice"):
        SortingTask(distinct=True).check("abca")


def test_exact_match_counts_only_whole_sequences():
    assert exact_match_rate(["abc", "abd", "ab"], ["abc", "abc", "abc"]) == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        exact_match_rate(["abc"], [])


class SortsPerfectly:
    """A stand-in model whose greedy generation writes the right answer, then <eos>, then junk."""

    def __init__(self, task: SortingTask, write_eos: bool = True):
        self.task, self.write_eos = task, write_eos
        self.anchor = torch.nn.Parameter(torch.zeros(1))

    def parameters(self):
        return iter([self.anchor])

    def generate_greedy(self, prompts, max_new_tokens):
        tokenizer = self.task.tokenizer
        rows = []
        for prompt in prompts.tolist():
            word = "".join(tokenizer.decode(prompt[1:-1]))
            answer = tokenizer.encode(self.task.answer(word))
            ending = [tokenizer.eos_id] if self.write_eos else tokenizer.encode("a")
            rows.append(prompt + (answer + ending + [tokenizer.separator_id] * 9)[:max_new_tokens])
        return torch.tensor(rows)


def test_predict_reads_each_answer_up_to_its_eos_in_the_words_order():
    words = ["hgf", "cab", "fedcba", "bba"]
    assert SORTING.predict(SortsPerfectly(SORTING), words) == ["fgh", "abc", "abcdef", "abb"]
    # Without <eos> the extra letter stays in the answer, so a model that never stops is never right.
    assert SORTING.predict(SortsPerfectly(SORTING, write_eos=False), ["cab"]) == ["abca"]


def test_a_task_survives_the_round_trip_through_its_config_entry():
    assert task_from_dict(SORTING.to_dict()) == SORTING
    assert task_from_dict(REVERSAL.to_dict()) == REVERSAL
    assert SORTING.to_dict()["name"] == "sort" and REVERSAL.to_dict()["name"] == "reverse"
    with pytest.raises(ValueError, match="unknown task"):
        task_from_dict({"name": "translate"})


def test_special_tokens_are_the_same_for_every_task():
    assert SORTING.tokenizer.tokens[:4] == REVERSAL.tokenizer.tokens[:4] == SPECIAL_TOKENS
