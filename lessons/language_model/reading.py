"""What SmolLM2 makes of a text: its guess at the next token, and how much of a head's attention rests
on the first token (one layer's attention itself: `lessons.common.decoder_attention`, which the masking lesson
shares).

Everything here is a pure function of the model and the token ids (torch only): the page caches the results,
and nothing is stored on the model, which every browser session shares.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from anatomy.models import DecoderOnlyLM
from lessons.common.decoder_attention import as_batch
from lessons.common.llm.readable import ModelTokens, text_tokens
from lessons.common.llm.smollm2 import ChatModel


def decoder_of(chat: ChatModel) -> DecoderOnlyLM:
    return chat.loaded.model_as(DecoderOnlyLM)


def chat_tokens(chat: ChatModel, message: str, max_tokens: int | None = None) -> tuple[str, ModelTokens]:
    """One user message through the chat template: the prompt text, and the very tokens the model reads."""
    prompt = chat.chat_prompt([{"role": "user", "content": message}])
    return prompt, text_tokens(chat, prompt, max_tokens)


# --- The next token --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidates:
    """The k most probable next tokens, best first, with their probabilities under the full softmax."""

    ids: tuple[int, ...]
    probabilities: tuple[float, ...]


@torch.no_grad()
def next_token_probabilities(model: DecoderOnlyLM, ids: tuple[int, ...]) -> Tensor:
    """(V,) softmax of the last position's logits: the model's distribution over the token after the text."""
    logits = model(as_batch(ids, model), last_logits_only=True, keep_hidden_states=False).logits[0, -1]  # (V,)
    return logits.float().softmax(dim=-1)


def top_candidates(probabilities: Tensor, k: int) -> Candidates:
    best = probabilities.topk(k)
    return Candidates(tuple(best.indices.tolist()), tuple(best.values.double().tolist()))


# --- One layer's attention -------------------------------------------------------------------------------


def first_token_share(weights: Tensor) -> float:
    """The weight the first token receives in one head's (T, T) map, averaged over the queries after the first
    (the first query has only itself to attend to, so it gives the first token 1 whatever the head)."""
    return float(weights[1:, 0].double().mean())


def even_first_token_share(num_tokens: int) -> float:
    """The same average for queries that spread their attention evenly: query t gives 1 / (t + 1) to each of the
    t + 1 tokens it may read, the first among them."""
    return sum(1 / (query + 1) for query in range(1, num_tokens)) / (num_tokens - 1)
