"""The multi-head lesson's exercises: which head of a layer is a previous-token head, how many numbers one
head's output holds for the whole text, and how many heads rest on [CLS] or [SEP]. All are read from the traced
run of the learner's text, with the lesson's own statistics (`statistics.previous_share`, `.resting_heads`) or
the shapes the trace records."""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from lessons.common import pooling
from lessons.common.exercises import Exercise, Offer
from lessons.common.labels import token_labels
from lessons.common.runs import EncoderRun
from lessons.multihead import figures
from lessons.multihead import statistics as head_stats
from lessons.multihead.statistics import HeadStatistics

# A head "clearly stands out" as a previous-token head when, on average, it gives the token just before each
# query at least this share of its attention, and at least MARGIN more than any other head of its layer does.
LEAST_PREVIOUS_SHARE = 0.5
MARGIN = 0.2
SHOWN_TOKEN = 1  # the token whose heads the reveal of the split draws: the first one after [CLS]


def previous_shares(weights: Tensor) -> Tensor:
    """(..., H, T, T) -> (..., H): the mean weight each head's queries give the token just before them."""
    return head_stats.previous_share(weights).mean(dim=-1)


@dataclass(frozen=True)
class PreviousTokenHead:
    """The head of one layer that gives the previous token most attention, and the head that comes next."""

    layer: int
    head: int
    share: float
    runner_up: int
    runner_up_share: float

    @property
    def lead(self) -> float:
        return self.share - self.runner_up_share

    @property
    def stands_out(self) -> bool:
        return self.share >= LEAST_PREVIOUS_SHARE and self.lead >= MARGIN


def strongest_previous_token_head(shares: Tensor, layer: int) -> PreviousTokenHead:
    """From one layer's (H,) previous-token shares: the largest, and the next largest (the lower head first
    among equals)."""
    ranked = shares.argsort(descending=True, stable=True)
    first, second = int(ranked[0]), int(ranked[1])
    return PreviousTokenHead(layer, first, float(shares[first]), second, float(shares[second]))


def previous_token_head(run: EncoderRun, layer: int) -> PreviousTokenHead | None:
    """The previous-token head of `layer` when one clearly stands out there; else that of the layer where one
    stands out furthest above the rest; None when no layer has one, or the text has no word to ask about."""
    if len(run.tokenized) < 3:  # [CLS] and [SEP] alone: no word looks back at anything
        return None
    here = strongest_previous_token_head(previous_shares(run.trace.layers[layer].attention.weights[0]), layer)
    if here.stands_out:
        return here
    every_layer = run.over_layers(previous_shares)  # (L, H), one layer's weights in memory at a time
    found = [strongest_previous_token_head(shares, index) for index, shares in enumerate(every_layer)]
    return max((head for head in found if head.stands_out), key=lambda head: head.lead, default=None)


def head_name(head: int) -> str:
    return f"head {head}"


def _layer_grid(run: EncoderRun, found: PreviousTokenHead):
    """Every head of the layer, as the All heads tab draws it, the previous-token head framed."""
    pooled = pooling.average_pool(run.trace.layers[found.layer].attention.weights[0])  # (H, T', S')
    tokens = run.tokenized.tokens
    labels = pooling.bin_labels(pooled.row_bins) if pooled.pooled else token_labels(tokens)
    titles = [
        f"{head_name(head)}: previous token" if head == found.head else head_name(head)
        for head in range(pooled.values.size(0))
    ]
    return figures.head_grid(pooled.values, labels, titles, title=f"Layer {found.layer}: every head", marked=found.head)


def which_head_looks_back(run: EncoderRun, layer: int) -> Exercise | None:
    """Which head of the layer is a previous-token head: the one whose queries give, on average, the most
    weight to the token just before them (asked only where one head clearly stands out)."""
    found = previous_token_head(run, layer)
    if found is None:
        return None
    heads = run.trace.layers[found.layer].attention.weights.size(1)
    moved = (
        ""
        if found.layer == layer
        else f"In layer {layer}, the one you chose, no head stands out that way on your text; in layer "
        f"{found.layer} one does. "
    )
    return Exercise(
        question=(
            f"{moved}A *previous-token head* sends each token's attention to the token just before it: its map "
            f"is a bright stripe just below the diagonal. Which of the {heads} heads of layer {found.layer} is "
            "one, on your text?"
        ),
        answer=head_name(found.head),
        options=tuple(head_name(head) for head in range(heads)),
        explanation=(
            f"On your text, every token's query in {head_name(found.head)} puts on average "
            f"**{found.share:.2f}** of its attention on the token just before it; the runner-up, "
            f"{head_name(found.runner_up)}, puts only {found.runner_up_share:.2f} there. "
            "The heads of one layer read the same tokens, yet each has its own query and key projections, "
            "so each learns its own way of looking: this one lets every token read its left neighbour, which "
            "later layers build on (to see which words stand together, for instance)."
        ),
        figure=lambda: _layer_grid(run, found),
    )


def numbers_in_one_head(run: EncoderRun, layer: int) -> Exercise | None:
    """How many numbers one head's output holds for the whole text: T × d_head, where d_head = D / H."""
    attention = run.trace.layers[layer].attention
    _, heads, tokens, head_width = attention.head_outputs.shape  # (B, H, T, d_head)
    width = attention.concatenated.size(-1)  # D
    answer = attention.head_outputs[0, 0].numel()  # (T, d_head)
    token = min(SHOWN_TOKEN, tokens - 1)
    return Exercise(
        question=(
            f"This model is D = {width:,} numbers wide, and each layer splits its attention among H = {heads} "
            f"heads. Your text is read as T = {tokens:,} tokens. After attention, how many numbers does one "
            f"head's output o_h hold for your whole text, before the {heads} outputs are laid side by side again?"
        ),
        answer=answer,
        explanation=(
            f"Each head works on d_head = D / H = {width:,} / {heads} = **{head_width}** numbers per token, so "
            f"o_h holds one row of {head_width} for each of your {tokens:,} tokens: {tokens:,} × {head_width} = "
            f"{answer:,}. Laid side by side, the {heads} heads' blocks give back {tokens:,} × {width:,} = "
            f"{tokens * width:,} numbers, as many as went in: the split loses nothing and adds nothing, and "
            "W_O then mixes the blocks into one output per token. The figure shows the heads of one token."
        ),
        figure=lambda: figures.recombination(
            attention.head_outputs[0, :, token],  # (H, d_head)
            attention.concatenated[0, token],  # (D,)
            title=f"Layer {layer}, token {token}: one block of {head_width} numbers per head",
            marked_head=0,
        ),
    )


def cls_and_sep_statistics(run: EncoderRun) -> HeadStatistics | None:
    """Every head's statistics with [CLS] and [SEP] marked; None when the text is not framed by them (a
    BERT-style input opens with [CLS] and closes with [SEP], so they are its first and last tokens)."""
    tokens, special = run.tokenized.tokens, run.tokenized.special
    if len(tokens) < 2 or not (special[0] and special[-1]):
        return None
    return head_stats.statistics_of_run(run, tokens[0], tokens[-1])


def heads_that_rest(run: EncoderRun, layer: int) -> Exercise | None:
    """How many of the model's heads give [CLS] or [SEP] more than ε of their attention on this text; asked
    only on a text long enough that a head spreading its weight evenly does not count as well."""
    statistics = cls_and_sep_statistics(run)
    if statistics is None:
        return None
    resting = head_stats.resting_heads(statistics, len(run.tokenized))
    if resting.even_spread_counts:
        return None
    layers, heads_per_layer = len(resting.either), resting.heads // len(resting.either)
    total, busiest = int(resting.either.sum()), int(resting.either.argmax())
    return Exercise(
        question=(
            f"Many heads of a BERT-style model park their attention on [CLS] or [SEP] when their own pattern finds "
            f"nothing to do. This model has {layers} layers of {heads_per_layer} heads, {resting.heads} in all. On "
            f"your text ({len(run.tokenized):,} tokens), how many of them give [CLS] or [SEP] more than "
            f"{resting.threshold} of their attention, on average over the tokens?"
        ),
        answer=total,
        tolerance=heads_per_layer // 2,
        explanation=(
            f"**{total}** of {resting.heads}: {int(resting.cls.sum())} rest on [CLS] and {int(resting.sep.sum())} "
            f"on [SEP]. Layer {busiest} has the most, {int(resting.either[busiest])} of its {heads_per_layer}. "
            "The count depends on the text: on a short one a head finds little to read and rests; on a long one "
            "many find words to follow. In the figure each head has the larger of its two shares: every cell above "
            f"{resting.threshold} is a head that rests. The *Head statistics* tab counts them layer by layer."
        ),
        figure=lambda: figures.layer_head_map(
            statistics.cls_share.maximum(statistics.sep_share),
            "larger share, [CLS] or [SEP]",
            zmin=0.0,
            zmax=1.0,
            title="Each head's larger share: [CLS] or [SEP]",
        ),
    )


OFFERS = {
    "previous": Offer("A previous-token head", which_head_looks_back),
    "split": Offer("Numbers in one head", numbers_in_one_head),
    "resting": Offer("Heads that rest", heads_that_rest),
}
