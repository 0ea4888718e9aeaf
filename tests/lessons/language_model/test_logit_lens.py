"""The logit lens: every layer's residual stream read through the final norm and the tied output matrix."""

from __future__ import annotations

import pytest
import torch

from lessons.common.decoder_attention import as_batch
from lessons.common.llm import readable
from lessons.language_model import logit_lens, reading

CAPITAL = "The capital of France is"


def test_the_lens_at_the_last_layer_is_the_models_own_guess_with_no_divergence(chat):
    model = reading.decoder_of(chat)
    ids = readable.text_tokens(chat, CAPITAL).ids
    lens = logit_lens.logit_lens(model, ids)
    assert lens.divergence[-1].tolist() == [0.0] * len(ids)
    own = model(as_batch(ids, model)).logits[0].float().softmax(-1).topk(3)
    assert torch.equal(lens.top_ids[-1], own.indices.cpu())
    torch.testing.assert_close(lens.top_probabilities[-1], own.values.double().cpu(), rtol=1e-5, atol=1e-6)


def test_each_depths_divergence_equals_the_sum_over_the_vocabulary_written_out(chat):
    model = reading.decoder_of(chat)
    ids = readable.text_tokens(chat, CAPITAL).ids
    lens = logit_lens.logit_lens(model, ids, positions=range(2, 4))
    states = model(as_batch(ids, model)).hidden_states
    final = model(as_batch(ids, model)).logits[0].double().softmax(-1)
    table = model.embeddings.token.weight.double()  # SmolLM2's output matrix is its embedding table
    for depth in (0, 7, 30):
        for column, position in enumerate((2, 3)):
            guess = (model.final_norm(states[depth][0, position]).double() @ table.T).softmax(-1)
            kl = float((final[position] * (final[position].log() - guess.log())).sum())
            assert float(lens.divergence[depth, column]) == pytest.approx(kl, rel=1e-3, abs=1e-4)


def test_the_lens_reads_the_last_positions_by_default_one_row_per_depth(chat):
    model = reading.decoder_of(chat)
    ids = readable.text_tokens(chat, "one two three four five six seven eight nine ten").ids
    lens = logit_lens.logit_lens(model, ids)
    assert lens.positions == tuple(range(len(ids) - logit_lens.POSITIONS, len(ids)))
    assert lens.top_ids.shape == (model.config.num_layers + 1, logit_lens.POSITIONS, logit_lens.TOP_TOKENS)


def test_smollm2_finds_paris_only_in_its_last_layers(chat):
    model = reading.decoder_of(chat)
    lens = logit_lens.logit_lens(model, readable.text_tokens(chat, CAPITAL).ids)
    best = [readable.piece_of(chat, int(token)) for token in lens.top_ids[:, -1, 0]]
    assert best[-1] == "·Paris" and best.index("·Paris") >= 28  # "·capital" at layer 29, "·Paris" at 30
