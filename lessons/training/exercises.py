"""The training lesson's exercises, on the model the learner chose: the loss it starts from before any training,
and how many parameters its training moves. The starting loss comes from `live.chance_loss`, with a fresh
model's first batch (`live.first_bets`) beside it; the count comes from `anatomy.config.parameter_count`."""

from __future__ import annotations

from anatomy.config import DecoderConfig, parameter_breakdown, parameter_count
from anatomy.training.recipes import Recipe
from lessons.common.exercises import Exercise, Offer
from lessons.training import figures, live, text

COUNT_SHARE = 0.1  # a parameter count within 10 % is right: what matters is which terms are large, not the sum


def _name(recipe: Recipe) -> str:
    return text.MODELS[recipe.name].lower()


def starting_loss(recipe: Recipe, seed: int) -> Exercise:
    """The loss of a model that knows nothing, ln V; the reveal sets the fresh model's own first loss beside it."""
    vocabulary = recipe.config.vocab_size
    letters = len(recipe.task.alphabet)
    chance = live.chance_loss(recipe)
    bets = live.first_bets(recipe, seed)
    gap = bets.loss - chance
    return Exercise(
        question=(
            f"Before its first step your {_name(recipe)} has random weights (seed {seed}): it knows nothing yet. "
            f"Its vocabulary holds {vocabulary} tokens, {letters} letters and {vocabulary - letters} special ones "
            "(`<pad>`, `<bos>`, `<eos>`, `=`). What loss does it start from? Two decimals; answers within ±0.05 "
            "count."
        ),
        answer=chance,
        decimals=2,
        tolerance=0.05,
        explanation=(
            f"A model that knows nothing gives each of the {vocabulary} tokens about the same probability, "
            f"1/{vocabulary}. The loss is −log of the probability it gives the right letter, so it starts at "
            f"−ln(1/{vocabulary}) = ln {vocabulary} ≈ {chance:.2f}, whichever letter is right. Your fresh "
            f"{_name(recipe)} measured **{bets.loss:.3f}** on the {recipe.settings.batch_size} words of its first "
            f"batch, {abs(gap):.3f} {'above' if gap > 0 else 'below'} ln {vocabulary}: its random weights are "
            "small, so its scores for all tokens come out nearly equal, and one batch is only a sample. Training "
            "goes down from there; a loss above it would mean the model bets worse than an even guess."
        ),
        figure=lambda: figures.first_bets_figure(
            bets.tokens,
            bets.probabilities.tolist(),
            f"Bets before step 1<br>loss {bets.loss:.3f}, ln {vocabulary} = {chance:.3f}",  # two lines fit a phone
        ),
    )


def _shape(recipe: Recipe) -> str:
    """The model's shape in the words of the question: every number a count needs, and nothing summed."""
    config = recipe.config
    if isinstance(config, DecoderConfig):
        blocks = f"a decoder of {config.num_layers} blocks (attention, then feed-forward)"
        tables = f"a table of {config.vocab_size} token vectors and one of {config.max_positions} position vectors"
        output = "the token table"
    else:
        blocks = (
            f"an encoder of {config.num_layers} block (attention, then feed-forward) and a decoder of "
            f"{config.num_decoder_layers} block (attention, cross-attention, then feed-forward)"
        )
        tables = (
            f"each half with its own table of {config.vocab_size} token vectors and {config.max_positions} "
            "position vectors"
        )
        output = "the decoder's token table"
    return (
        f"{blocks}, of width D = {config.width} and feed-forward width F = {config.ff_width}, {tables}; "
        "every projection has a bias, a LayerNorm stands before each sublayer and one at the end, and the "
        f"output layer reuses {output}"
    )


def parameter_total(recipe: Recipe, seed: int) -> Exercise:
    """How many parameters the model has: its configuration's count, part by part (the seed changes none)."""
    parts = parameter_breakdown(recipe.config)
    total = parameter_count(recipe.config)
    tolerance = round(total * COUNT_SHARE, -3)
    in_blocks = sum(count for name, count in parts.items() if "(all layers)" in name)
    D, F = recipe.config.width, recipe.config.ff_width
    listed = ", ".join(f"{name} {count:,}" for name, count in parts.items())
    return Exercise(
        question=(
            f"Your {_name(recipe)} is {_shape(recipe)}. How many parameters does training adjust? Answers within "
            f"±{tolerance:,.0f} count."
        ),
        answer=total,
        tolerance=tolerance,
        explanation=(
            f"**{total:,}** parameters: {listed}. Each attention holds four D × D matrices, `W_Q`, `W_K`, `W_V` and "
            f"`W_O` (4 · {D}² = {4 * D * D:,}), with a bias of D each; each feed-forward holds two matrices between "
            f"D and F (2 · {D} · {F} = {2 * D * F:,}) and their biases. So the blocks hold {in_blocks / total:.0%} "
            "of the model. The tables add a row of D per token and per position, a LayerNorm only a gain and a "
            "shift of D each, and the output layer nothing, since it reuses the token table. Every one of them "
            "is moved a little at every step."
        ),
        figure=lambda: figures.parameters_figure(parts, f"Your {_name(recipe)}: {total:,} parameters"),
    )


OFFERS = {
    "starting-loss": Offer("Loss before training", starting_loss),
    "parameters": Offer("Parameters to train", parameter_total),
}
