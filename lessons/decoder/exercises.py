"""The decoder lesson's exercises: which source letter the reverser's cross-attention reads at one step of
its answer, measured on the word in the field, and how many parameters the cross-attention sublayer adds to
a decoder block, counted from the reverser's configuration."""

from __future__ import annotations

from anatomy.config import Seq2SeqConfig
from anatomy.training.recipes import RECIPES
from lessons.common.block_figures import block_parameters_chart
from lessons.common.block_parameters import block_parameters
from lessons.common.exercises import Exercise, Offer
from lessons.common.labels import token_label, token_labels
from lessons.common.plots import safe_label
from lessons.common.safe_text import visible
from lessons.decoder import figures, tables
from lessons.decoder.reversal import ReversalLesson

HEAD = 0  # the head a question asks about: each head has its own row of weights at every step
DEFAULT_STEP = 1  # the second letter written: its mirrored position is not simply the last one


def step_asked(lesson: ReversalLesson) -> int:
    """The step a question asks about: the first letter step whose mirrored source letter occurs more than
    once in the word (the letter alone cannot tell which copy to read), else step 1."""
    mirrored = lesson.mirrored_positions.tolist()
    for step in range(lesson.letter_steps):
        if lesson.word.count(lesson.word[mirrored[step]]) > 1:
            return step
    return DEFAULT_STEP


def letter_read_at_a_step(lesson: ReversalLesson | None) -> Exercise | None:
    """Which source position head 0 of cross-attention weighs most at one step of the reverser's answer."""
    if lesson is None:
        return None
    source, step = lesson.source_tokens, step_asked(lesson)
    read = lesson.steps[step].most_read[HEAD]
    mirrored = int(lesson.mirrored_positions[step])
    weights = lesson.steps[step].cross_attention  # (H, S)
    word = visible(lesson.word)
    letter = source[mirrored]
    copies = [position for position, other in enumerate(source) if other == letter]
    why = (
        f"To write a word of S letters backwards, step t copies the letter at position S − 1 − t, here "
        f"{len(source)} − 1 − {step} = {mirrored}: the letter step {step} must read, and head {HEAD} does."
        if read == mirrored
        else f"To write a word of S letters backwards, step t should read position S − 1 − t, here "
        f"{len(source)} − 1 − {step} = {mirrored}; head {HEAD} reads another letter most, and the table of steps "
        "shows what the reverser writes instead."
    )
    repeated = (
        f" The letter “{visible(letter)}” stands at positions {', '.join(map(str, copies))}: cross-attention tells "
        "the copies apart by the position each encoder output carries, not by the letter."
        if len(copies) > 1
        else ""
    )
    others = ", ".join(
        f"head {head} puts {float(weights[head, position]):.2f} on {token_label(position, source[position])}"
        for head, position in enumerate(lesson.steps[step].most_read)
    )
    return Exercise(
        question=(
            f"The reverser writes “{word}” backwards, one token per step, counting from step 0 (the first letter "
            f"it writes). At step {step}, on which letter of the source, numbered from 0, does head {HEAD} of "
            "cross-attention put the most weight?"
        ),
        answer=token_label(read, source[read]),
        options=tuple(token_labels(source)),
        explanation=(
            f"At step {step}, {others}. {why}{repeated} The query comes from the decoder (the step), the keys from "
            "the encoder's output (the source letters): the row of weights is where this step looks."
        ),
        figure=lambda: figures.heads_figure(
            lesson.cross_attention,
            tables.step_labels(lesson),
            source,
            f"Cross-attention on “{safe_label(lesson.word)}”: step {step} framed",
            "step: input → written",
            "source",
            marks=lesson.alignment,
            mark_name="the source letter this step reads most",
            framed_row=step,
        ),
    )


def reverser_config() -> Seq2SeqConfig:
    """The reverser's configuration, as the lesson's table of families reads it."""
    config = RECIPES["reverser"].config
    assert isinstance(config, Seq2SeqConfig)
    return config


def parameters_cross_attention_adds(lesson: ReversalLesson | None) -> Exercise:
    """How many more parameters one decoder block of the reverser holds than one of its encoder blocks. Its
    configuration says; the word plays no part, so `lesson` is not read."""
    config = reverser_config()
    encoder_block, decoder_block = block_parameters(config.encoder), block_parameters(config.decoder)
    encoder_total, decoder_total = sum(encoder_block.values()), sum(decoder_block.values())
    one_norm = decoder_block["layer norms"] // 2  # the two norms around self-attention and the feed-forward
    return Exercise(
        question=(
            f"Both halves of the reverser have width D = {config.width} and feed-forward width F = "
            f"{config.ff_width}. An encoder block is self-attention and a feed-forward network, each with its "
            "layer norm; a decoder block has the same and one sublayer more. How many parameters more does one "
            "decoder block hold than one encoder block? Give the exact count."
        ),
        answer=decoder_total - encoder_total,
        explanation=(
            f"One decoder block holds {decoder_total:,} parameters and one encoder block {encoder_total:,}: "
            f"{decoder_total - encoder_total:,} more, all of them in cross-attention. It has its own W_Q, W_K, "
            f"W_V and W_O with biases, the same shapes as self-attention ({decoder_block['attention']:,}), since "
            "its queries come from the decoder and its keys and values from the encoder's output, both D wide; "
            f"and its own layer norm in front ({one_norm:,}: γ and β of D each). Self-attention, the feed-forward "
            "network and their norms are the same in both halves. The causal mask costs nothing: it is a rule "
            "about which weights may be nonzero, not a weight."
        ),
        figure=lambda: block_parameters_chart(
            {"encoder block": encoder_block, "decoder block": decoder_block},
            f"The reverser's blocks: {decoder_total - encoder_total:,} parameters more in a decoder block",
        ),
    )


OFFERS = {
    "letter": Offer("The letter a step reads", letter_read_at_a_step),
    "cross": Offer("What cross-attention costs", parameters_cross_attention_adds),
}
