"""The heads that rest on [CLS] or [SEP], counted the slow, plain way from transformers' own attention: the
reference the page and the exercise are checked against."""

from __future__ import annotations

import torch


def resting_counts_by_loop(hf_bert, tokenizer, text: str, threshold: float = 0.3) -> list[dict[str, int]]:
    """Per layer, the heads whose mean weight on [CLS] (the first token) or [SEP] (the last) exceeds the
    threshold, from transformers' own attention, one layer, head and query at a time."""
    with torch.no_grad():
        attentions = hf_bert(**tokenizer(text, return_tensors="pt"), output_attentions=True).attentions
    rows = []
    for layer, weights in enumerate(attentions):
        _, heads, tokens, _ = weights.shape  # (1, H, T, T)
        counts = {"layer": layer, "[CLS]": 0, "[SEP]": 0, "either": 0}
        for head in range(heads):
            on_cls = sum(float(weights[0, head, query, 0]) for query in range(tokens)) / tokens
            on_sep = sum(float(weights[0, head, query, tokens - 1]) for query in range(tokens)) / tokens
            counts["[CLS]"] += on_cls > threshold
            counts["[SEP]"] += on_sep > threshold
            counts["either"] += on_cls > threshold or on_sep > threshold
        rows.append(counts)
    return rows
