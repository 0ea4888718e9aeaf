"""One loop writes every token: `generation_steps` (and `seq2seq_generation_steps` for an encoder-decoder)
yields each step's logits, the token chosen and, when asked, the trace; every other writer records its steps.

The decoder-only model is a tiny random GPT-2 saved by transformers (weights std 0.5, so greedy decoding
wanders instead of repeating one token); the encoder-decoder is an untrained one with std 0.5 weights.
"""

from __future__ import annotations

import pytest
import torch

from anatomy.checkpoints.pretrained import load_pretrained
from anatomy.config import Seq2SeqConfig
from anatomy.generation import Sampling, choosing, generate, generation_steps, seq2seq_generation_steps
from anatomy.masks import padding_mask
from anatomy.seq2seq import EncoderDecoder
from anatomy.training.loop import initialize_weights
from anatomy.training.tasks import ReversalTask
from tests.tiny_models import VOCABULARY, save_wandering_gpt2

pytestmark = pytest.mark.usefixtures("no_autograd")

# A cached step multiplies a (1 × D) row where a recompute multiplies a (T × D) block, and BLAS sums those in
# different orders (tests/anatomy/test_parity_llama.py measured 1e-5 on logits of size ~5).
CACHE_TOLERANCE = 5e-5
TASK = ReversalTask(alphabet="abcdefgh", min_length=2, max_length=6)


@pytest.fixture(scope="module")
def checkpoint_folder(tmp_path_factory):
    return save_wandering_gpt2(tmp_path_factory.mktemp("tiny-gpt2-generation"))


@pytest.fixture(scope="module")
def ours(checkpoint_folder):
    return load_pretrained(str(checkpoint_folder), device="cpu").model


@pytest.fixture(scope="module")
def reference(checkpoint_folder):
    from transformers import GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained(str(checkpoint_folder), attn_implementation="eager")
    return model.eval().requires_grad_(False)


@pytest.fixture(scope="module")
def prompts():
    return torch.randint(0, VOCABULARY, (3, 5), generator=torch.Generator().manual_seed(1))  # (B, T)


@pytest.fixture(scope="module")
def reverser():
    config = Seq2SeqConfig(vocab_size=len(TASK.tokenizer), max_positions=8, width=32, num_heads=4, ff_width=64)
    return initialize_weights(EncoderDecoder(config), seed=0, std=0.5).eval()


def written(prompt_ids, steps) -> torch.Tensor:
    """The prompt and every token the steps chose, (B, T + n)."""
    return torch.cat([prompt_ids, *(step.chosen_ids for step in steps)], dim=1)


@pytest.mark.parametrize("use_cache", [True, False], ids=["cached", "uncached"])
def test_greedy_steps_write_the_tokens_and_scores_of_transformers_generate(ours, reference, prompts, use_cache):
    steps = list(generation_steps(ours, prompts, 12, cache=ours.new_cache() if use_cache else None))
    expected = reference.generate(
        prompts,
        attention_mask=torch.ones_like(prompts),
        do_sample=False,
        max_new_tokens=12,
        pad_token_id=0,
        output_scores=True,
        return_dict_in_generate=True,
    )
    assert written(prompts, steps).tolist() == expected.sequences.tolist()
    assert len(steps) == len(expected.scores) == 12
    for step, scores in zip(steps, expected.scores, strict=True):
        assert (step.logits - scores).abs().max() <= CACHE_TOLERANCE


def test_each_step_holds_the_sequence_it_read_and_the_logits_of_a_plain_forward_over_it(ours, prompts):
    for position, step in enumerate(generation_steps(ours, prompts, 6, trace=True), start=5):
        assert step.sequence.shape == (3, position)
        plain = ours(step.sequence, trace=True)  # traced, as the steps ran: the fused attention rounds otherwise
        assert torch.equal(step.logits, plain.logits[:, -1])  # bit for bit, without a cache
        assert torch.equal(step.chosen_ids, step.logits.argmax(dim=-1, keepdim=True))
        assert step.recorded_trace.attention_weights.shape == (2, 3, 4, position, position)


def test_steps_without_trace_say_that_they_recorded_none(ours, prompts):
    step = next(generation_steps(ours, prompts, 1))
    assert step.trace is None
    with pytest.raises(ValueError, match="trace=True"):
        _ = step.recorded_trace


def test_a_batch_stops_once_every_sequence_wrote_a_stop_token_and_a_finished_one_repeats_it(ours, prompts):
    start = prompts.size(1)
    free = written(prompts, generation_steps(ours, prompts, 12))
    stop_ids = {int(free[row, start + 2 + row]) for row in range(len(prompts))}  # row r writes one by token 3 + r
    steps = list(generation_steps(ours, prompts, 12, stop_token_ids=stop_ids))
    sequences = written(prompts, steps)
    first_stops = []
    for stopped, unstopped in zip(sequences.tolist(), free.tolist()):
        first_stop = next(index for index, token in enumerate(stopped[start:], start=start) if token in stop_ids)
        assert stopped[: first_stop + 1] == unstopped[: first_stop + 1]  # written as if no token stopped it
        assert set(stopped[first_stop:]) == {stopped[first_stop]}  # then its stop token, repeated to the end
        first_stops.append(first_stop)
    assert len(steps) == max(first_stops) - start + 1 < 12  # the batch ends with its last sequence's stop


def test_a_seeded_sampler_draws_the_same_tokens_in_the_steps_as_in_generate(ours, prompts):
    sampling = Sampling(temperature=0.8, top_k=20, top_p=0.9)
    choose = choosing(sampling, torch.Generator().manual_seed(7))
    steps = list(generation_steps(ours, prompts, 12, choose=choose, cache=ours.new_cache()))
    generated = generate(ours, prompts, 12, sampling=sampling, generator=torch.Generator().manual_seed(7))
    assert torch.equal(written(prompts, steps), generated)
    assert not torch.equal(generated, generate(ours, prompts, 12))  # sampled, not greedy


def test_generate_greedy_is_the_prompt_and_the_uncached_greedy_steps(ours, prompts):
    steps = generation_steps(ours, prompts, 12)
    assert torch.equal(ours.generate_greedy(prompts, 12), written(prompts, steps))


def test_without_a_cache_a_sequence_longer_than_the_positions_reads_only_the_last_ones(ours, prompts):
    steps = list(generation_steps(ours, prompts, 62))  # 5 + 62 tokens > 64 positions
    last = steps[-1]
    assert last.sequence.size(1) == 66
    assert torch.equal(last.logits, ours(last.sequence[:, -64:]).logits[:, -1])


def test_seq2seq_steps_read_the_encoder_output_and_write_what_generate_greedy_writes(reverser):
    source_ids, source_mask = TASK.sources(["abcdef", "hgf", "cc"])
    memory = reverser.encode(source_ids, source_mask).last_hidden_state  # (B, S, D)
    start_ids = torch.full((3, 1), TASK.tokenizer.bos_id)
    steps = list(seq2seq_generation_steps(reverser, memory, start_ids, 5, source_mask=source_mask, trace=True))
    assert torch.equal(
        written(start_ids, steps), reverser.generate_greedy(source_ids, TASK.tokenizer.bos_id, 5, source_mask)
    )
    for step in steps:
        full = reverser.decoder(step.sequence, memory, padding_mask(source_mask), trace=True)  # the same memory
        assert torch.equal(step.logits, full.logits[:, -1])
        cross = step.recorded_trace.layers[0].cross_attention
        assert cross is not None and cross.weights.shape == (3, 4, step.sequence.size(1), source_ids.size(1))
