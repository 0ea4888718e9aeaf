"""One word in two sentences: the same weights read it, yet where it looks and what it becomes depend on its
neighbours ("time flies like an arrow" against "fruit flies like a banana")."""

from __future__ import annotations

from torch import Tensor

from anatomy.trace import ModelTrace
from lessons.common.runs import TokenizedText
from lessons.multihead.ablation import attention_shift, cosine_similarity, states_by_depth


def shared_words(first: TokenizedText, second: TokenizedText) -> list[str]:
    """Ordinary tokens of the first text that also occur in the second, in the first text's order, each once
    ([CLS] and [SEP] are in every text, so they are no word to follow)."""
    others = {token for token, special in zip(second.tokens, second.special) if not special}
    words = [token for token, special in zip(first.tokens, first.special) if not special and token in others]
    return list(dict.fromkeys(words))


def word_attention_shift(first_weights: Tensor, second_weights: Tensor, positions: tuple[int, int]) -> Tensor:
    """(H, T, T) one layer's weights in each sentence and the word's position in each -> (H,): how far the
    word's row moved between the sentences in every head, ½ Σ|p − q| (0 = same, 1 = disjoint).

    A row is compared key by key, so the two sentences must have the same number of tokens."""
    first_row = first_weights[:, positions[0] : positions[0] + 1]  # (H, 1, T)
    second_row = second_weights[:, positions[1] : positions[1] + 1]  # (H, 1, T)
    return attention_shift(first_row, second_row)


def word_similarity_by_depth(first: ModelTrace, second: ModelTrace, positions: tuple[int, int]) -> Tensor:
    """(L + 1,) the cosine similarity of the word's vector in the two sentences: the embeddings, then the
    output of every layer."""
    return cosine_similarity(states_by_depth(first)[:, positions[0]], states_by_depth(second)[:, positions[1]])
