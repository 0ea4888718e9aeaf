"""Writing step by step gives exactly the tokens `anatomy.generation.generate` writes, and records each step."""

from __future__ import annotations

import pytest
import torch

from anatomy.config import DecoderConfig
from anatomy.generation import Sampling, choosing, filtered_scores, generate, generation_steps
from anatomy.models import DecoderOnlyLM
from anatomy.training.loop import initialize_weights
from lessons.common import decoder_attention
from lessons.common.llm import readable
from lessons.language_model import reading, writing

pytestmark = pytest.mark.slow  # loads SmolLM2 and writes (seconds)

PROMPT = "The capital of France is"


def generated(chat, new_tokens: int, **options) -> list[int]:
    ids = tuple(chat.encode(PROMPT))
    model = reading.decoder_of(chat)
    return generate(model, decoder_attention.as_batch(ids, model), new_tokens, **options)[0, len(ids) :].tolist()


def test_greedy_steps_write_what_generate_writes_and_each_takes_the_most_probable_token(chat):
    steps = writing.write(reading.decoder_of(chat), tuple(chat.encode(PROMPT)), 12)
    assert writing.written_ids(steps) == generated(chat, 12)
    assert readable.piece_of(chat, steps[0].token_id) == "·Paris"
    assert steps[0].probability == pytest.approx(0.773, abs=0.005)
    for step in steps:
        assert step.candidates[0] == step.token_id and step.probability == step.model_probability
        assert step.kept == 49_152  # greedy: the whole vocabulary is in the running


def test_sampled_steps_with_a_seed_write_what_generate_writes_with_that_seed_every_time(chat):
    sampling = Sampling(temperature=0.8, top_k=50, top_p=0.95)
    model, ids = reading.decoder_of(chat), tuple(chat.encode(PROMPT))
    first = writing.write(model, ids, 12, sampling, seed=3)
    assert writing.written_ids(first) == generated(
        chat,
        12,
        sampling=sampling,
        generator=torch.Generator(device=model.embeddings.token.weight.device).manual_seed(3),
    )
    assert writing.write(model, ids, 12, sampling, seed=3) == first
    assert writing.written_ids(writing.write(model, ids, 12, sampling, seed=4)) != writing.written_ids(first)
    # Temperature 0.8 sharpens, top-k and top-p cut: the token is more likely in the draw than in the model.
    assert first[0].probability > first[0].model_probability
    assert all(step.kept <= 50 for step in first)
    few_kept = [step for step in first if step.kept <= 5]  # every candidate kept is shown: they sum to 1
    assert few_kept and all(abs(sum(step.candidate_probabilities) - 1) < 1e-6 for step in few_kept)


def test_writing_stops_after_a_stop_token(chat):
    _, tokens = reading.chat_tokens(chat, "What is the capital of France?")
    steps = writing.write(reading.decoder_of(chat), tokens.ids, 40, stop_token_ids=chat.stop_token_ids)
    assert steps[-1].token_id in chat.stop_token_ids and len(steps) < 40
    assert "Paris" in chat.tokenizer.decode(writing.written_ids(steps))


def test_the_end_of_the_turn_is_the_first_step_that_wrote_a_stop_token(chat):
    steps = writing.write(reading.decoder_of(chat), tuple(chat.encode(PROMPT)), 32)  # greedy, no stop
    assert [step.token_id for step in steps[29:32]] == [2, 198, 1]  # <|im_end|>, a line break, <|im_start|>
    assert writing.end_of_turn(steps, chat.stop_token_ids) == 29
    assert writing.end_of_turn(steps, {1, 2}) == 29 and writing.end_of_turn(steps, {1}) == 31
    assert writing.end_of_turn(steps[:29], chat.stop_token_ids) is None


def test_writing_records_the_steps_of_the_one_generation_loop_with_its_seeded_sampler():
    config = DecoderConfig(vocab_size=50, max_positions=32, width=32, num_layers=2, num_heads=4, ff_width=64)
    model = initialize_weights(DecoderOnlyLM(config), seed=0, std=0.5).eval()
    sampling, prompt_ids = Sampling(temperature=0.8, top_k=20), (3, 14, 15, 9, 2)
    recorded = writing.write(model, prompt_ids, 16, sampling, seed=3, stop_token_ids={5})
    choose = choosing(sampling, torch.Generator().manual_seed(3))
    steps = generation_steps(
        model, torch.tensor([prompt_ids]), 16, choose=choose, cache=model.new_cache(), stop_token_ids={5}
    )
    for record, step in zip(recorded, steps, strict=True):
        assert record.token_id == int(step.chosen_ids)
        drawn_from = filtered_scores(step.logits, sampling).softmax(dim=-1)[0]
        assert record.probability == float(drawn_from[record.token_id])
        assert record.model_probability == float(step.logits[0].softmax(dim=-1)[record.token_id])
