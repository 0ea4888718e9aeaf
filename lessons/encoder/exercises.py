"""The encoder lesson's exercises: how many parameters one block of the loaded model holds, counted from its
configuration, which token's vector ends the stack nearest to a given token's, measured on the traced run of
the learner's text, and which word the masked-LM head puts first behind the text's [MASK]. Each is built from
(the traced run, the model's configuration, the loaded model), and reads only what it needs."""

from __future__ import annotations

from anatomy.checkpoints.pretrained import PretrainedModel
from anatomy.config import TransformerConfig
from lessons.common.block_figures import block_parameters_chart
from lessons.common.block_parameters import block_parameters
from lessons.common.exercises import Exercise, Offer
from lessons.common.labels import token_label
from lessons.common.next_token_figures import candidates_figure
from lessons.common.plots import safe_label
from lessons.common.runs import EncoderRun
from lessons.common.safe_text import code_span, visible
from lessons.encoder import analysis, figures, fill_mask, tables, text

BLOCK_TOLERANCE = 0.01  # a block count is right within 1%: the biases and layer norms are a sliver of it
NEAREST_OPTIONS = 4
MASK_OPTIONS = 5  # the head's five best words: enough to make the learner think, few enough to read


def parameters_of_a_block(run: EncoderRun, config: TransformerConfig, pretrained: PretrainedModel) -> Exercise:
    """How many parameters one block of the loaded model holds (its configuration says; the text plays no
    part, so neither `run` nor `pretrained` is read)."""
    parts = block_parameters(config)
    total = sum(parts.values())
    width, ff_width = config.width, config.ff_width
    matrices = 4 * width * width + 2 * width * ff_width  # the weight matrices alone, as a quick estimate counts
    return Exercise(
        question=(
            f"Every block of this model has width D = {width:,} and feed-forward width F = {ff_width:,}. How "
            "many parameters does one block hold, counting its attention, its feed-forward network and its two "
            f"layer norms? Answers within {BLOCK_TOLERANCE:.0%} count."
        ),
        answer=total,
        tolerance=round(total * BLOCK_TOLERANCE),
        explanation=(
            f"One block holds {total:,} parameters: {parts['attention']:,} in attention (four D × D matrices, "
            f"W_Q, W_K, W_V and W_O, each with a bias of D), {parts['feed-forward']:,} in the feed-forward "
            f"network (D × F in and F × D out, with biases of F and D) and {parts['layer norms']:,} in the two "
            f"layer norms (a gain γ and a shift β of D each). The weight matrices alone, 4D² + 2DF = "
            f"{matrices:,}, are {matrices / total:.1%} of it: biases and norms barely count, which is why an "
            "estimate without them is close enough. Nothing here depends on the text: a block's weights are "
            f"the same whatever it reads, and all {config.num_layers} blocks together hold "
            f"{config.num_layers * total:,}."
        ),
        figure=lambda: block_parameters_chart(
            {"one encoder block": parts}, f"One block of this model: {total:,} parameters"
        ),
    )


def nearest_after_the_stack(run: EncoderRun, config: TransformerConfig, pretrained: PretrainedModel) -> Exercise | None:
    """Which token's final vector is nearest (by cosine) to the final vector of the text's longest token (the
    first of equals), among every other token the model read, [CLS] and [SEP] included (the traced run holds
    them: `pretrained` is not read)."""
    tokens = run.tokenized.tokens
    words = [position for position, special in enumerate(run.tokenized.special) if not special]
    if not words or len(tokens) < 3:
        return None
    asked = max(words, key=lambda position: len(tokens[position]))  # max keeps the first of equals
    similarity = analysis.similarity_to_token(run.output.hidden_states, asked).cpu()  # (L + 1, T)
    ranked = analysis.others_by_similarity(similarity[-1], asked)
    nearest, least = ranked[0], ranked[-1]
    # The nearest, the runner-up, one from the middle of the ranking and the farthest, in the text's order.
    chosen = {nearest, ranked[1], ranked[len(ranked) // 2], least} if len(ranked) > NEAREST_OPTIONS else set(ranked)
    options = tuple(token_label(position, tokens[position]) for position in sorted(chosen))
    before = analysis.others_by_similarity(similarity[0], asked)[0]
    last_layer = config.num_layers - 1

    def named(position: int) -> str:
        return f"{code_span(tokens[position])} at position {position}"

    def cosine(depth: int, position: int) -> str:
        return f"{float(similarity[depth, position]):.3f}"

    at_embeddings = (
        f"its nearest token was the same one, at a cosine of {cosine(0, before)}"
        if before == nearest
        else f"its nearest token was {named(before)}, at a cosine of {cosine(0, before)}: the layers changed it"
    )
    return Exercise(
        question=(
            f"After the last of the {config.num_layers} layers, which token's vector points most nearly the same "
            f"way (the highest cosine similarity) as the vector of {named(asked)}? Tokens are counted from 0, "
            "`[CLS]` first."
        ),
        answer=token_label(nearest, tokens[nearest]),
        options=options,
        explanation=(
            f"After layer {last_layer}, the vector of {named(asked)} is nearest to that of {named(nearest)}: a "
            f"cosine of {cosine(-1, nearest)}, the highest of the {len(ranked)} other tokens. The runner-up is "
            f"{named(ranked[1])} ({cosine(-1, ranked[1])}) and the farthest {named(least)} "
            f"({cosine(-1, least)}). Cosine compares directions only: 1 for the same direction, 0 for unrelated "
            f"ones. At the embeddings, before any layer, {at_embeddings}. Every layer adds to each vector what "
            "attention gathered from the other tokens, so after the stack a token's neighbours depend on the "
            "whole text, not only on the word itself."
        ),
        figure=lambda: figures.layer_token_heatmap(
            similarity,
            tables.depth_labels(config.num_layers),
            tokens,
            f"cosine with {safe_label(tokens[asked])} (position {asked}) at every depth, the nearest after "
            f"layer {last_layer} framed",
            zmax=1.0,
            value_name="cosine",
            value_format=".3f",
            marked=[(config.num_layers, nearest)],
        ),
    )


def _alphabetical(word: str) -> tuple[str, str]:
    """Options in a neutral order: alphabetical, ignoring case and the marks of a word piece (`##`, RoBERTa's
    `Ġ` for a space before it)."""
    return word.removeprefix("##").removeprefix("Ġ").casefold(), word


def first_word_in_the_mask(run: EncoderRun, config: TransformerConfig, pretrained: PretrainedModel) -> Exercise | str:
    """Which word the masked-LM head puts first behind the text's first mask, among its five best; without a
    head or without a mask, the sentence saying what would make it askable (the tab's own)."""
    filled = fill_mask.fill_the_text(pretrained, run, MASK_OPTIONS)
    if isinstance(filled, str):
        return filled
    fill = filled.fills[0]
    words, probabilities = list(fill.tokens), list(fill.probabilities)
    answer = words[0]
    others = ", ".join(
        f"{code_span(word)} {probability:.3f}" for word, probability in zip(words[1:], probabilities[1:])
    )
    around = (
        f"Your text has {filled.num_masks} masks. Around the first"
        if filled.num_masks > 1
        else "Around the mask of your text"
    )
    return Exercise(
        question=(
            f"{around}, the model reads “{visible(fill_mask.context_of(run, fill.position))}” (▢ marks it: token "
            f"{fill.position}). Which word does its masked-LM head put first there? These are its {len(words)} best "
            "guesses, in alphabetical order."
        ),
        answer=answer,
        options=tuple(sorted(dict.fromkeys(words), key=_alphabetical)),
        explanation=(
            f"The head gives {code_span(answer)} a probability of {probabilities[0]:.3f}, more than any other of "
            f"the {config.vocab_size:,} words of its vocabulary. The others: {others or 'none'}. Together these "
            f"{len(words)} take {sum(probabilities):.1%} of the probability. The guess reads the mask's final "
            f"vector alone, but after {config.num_layers} layers of attention that vector holds what the mask "
            "gathered from the words on both sides of it: an encoder sees the whole text at once."
        ),
        figure=lambda: candidates_figure(words, probabilities, text.mask_chart_title(1, fill.position), chosen=0),
    )


OFFERS = {
    "block": Offer("Parameters of one block", parameters_of_a_block),
    "nearest": Offer("Nearest token after the stack", nearest_after_the_stack),
    "fill-mask": Offer("The word behind the mask", first_word_in_the_mask),
}
