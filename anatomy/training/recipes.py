"""The three small models this project trains itself and ships in `anatomy/checkpoints/trained/`, with their recipes.

* `sorter`: a GPT-2-shaped decoder that sorts the letters of a word, `<bos> hello = ehllo <eos>`.
* `sorter-cheater`: the same model, the same data, the same seeds, trained *without* the causal mask. During
  teacher forcing every position can read the token it is asked to predict, so its loss collapses; when it
  must write its answer one token at a time, the future it learned to copy is not there, and it fails.
* `reverser`: an encoder-decoder that writes a word back to front; its cross-attention shows which source
  letter each output letter reads (an anti-diagonal).

`scripts/train_models.py` runs these recipes and writes the folders; tests check the shipped weights on
words drawn with `HELD_OUT_SEED`, a seed no recipe trains on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from torch import nn

from anatomy.config import DecoderConfig, Seq2SeqConfig
from anatomy.models import DecoderOnlyLM
from anatomy.seq2seq import EncoderDecoder
from anatomy.training.loop import TrainingRun, TrainingSettings, build_model, train
from anatomy.training.tasks import LetterTask, ReversalTask, SortingTask

TRAINED_FOLDER = Path(__file__).parents[1] / "checkpoints" / "trained"
HELD_OUT_SEED = 20_250  # test words come from this seed; training examples from TrainingSettings.seed


@dataclass(frozen=True)
class Recipe:
    """Everything that determines a trained model: task, architecture, training settings and seeds."""

    name: str
    task: LetterTask
    config: DecoderConfig | Seq2SeqConfig
    settings: TrainingSettings
    init_seed: int  # seeds the initial weights (the examples are seeded by settings.seed)

    @property
    def folder(self) -> Path:
        """Where the shipped weights of this recipe live."""
        return TRAINED_FOLDER / self.name

    def build(self) -> nn.Module:
        """The untrained model, initialised from `init_seed`."""
        model_class = EncoderDecoder if isinstance(self.config, Seq2SeqConfig) else DecoderOnlyLM
        return build_model(model_class, self.config, self.init_seed)

    def train(self, on_step: Callable[[int, float], None] | None = None, **overrides) -> tuple[nn.Module, TrainingRun]:
        """Build and train; `overrides` replace settings fields (e.g. steps=20, time_budget_s=30)."""
        model = self.build()
        run = train(model, self.task, replace(self.settings, **overrides), on_step)
        return model, run


# Any lowercase word of 3 to 8 letters, repeats allowed: "banana" -> "aaabnn".
SORTING = SortingTask(alphabet="abcdefghijklmnopqrstuvwxyz", min_length=3, max_length=8, distinct=False)
# GPT-2's architecture, shrunk: pre-LN, tanh GELU, learned positions, tied LM head (DecoderConfig's defaults).
SORTER_CONFIG = DecoderConfig(
    vocab_size=len(SORTING.tokenizer),  # 4 special tokens + 26 letters
    max_positions=2 * SORTING.max_length + 3,  # <bos> 8 letters = 8 letters <eos>
    width=64,
    num_layers=2,
    num_heads=2,
    ff_width=256,
    dropout=0.0,
)
SORTER_SETTINGS = TrainingSettings(steps=4000, batch_size=64, learning_rate=3e-3, seed=1)

REVERSAL = ReversalTask(alphabet="abcdefghijklmnopqrstuvwxyz", min_length=3, max_length=8, distinct=False)
REVERSER_CONFIG = Seq2SeqConfig(
    vocab_size=len(REVERSAL.tokenizer),
    max_positions=REVERSAL.max_length + 2,  # the target: <bos> 8 letters <eos>
    width=64,
    num_layers=1,  # encoder blocks
    num_decoder_layers=1,  # one decoder block: one cross-attention to look at
    num_heads=2,
    ff_width=128,
)
REVERSER_SETTINGS = TrainingSettings(steps=1500, batch_size=64, learning_rate=3e-3, seed=1)

RECIPES: dict[str, Recipe] = {
    recipe.name: recipe
    for recipe in (
        Recipe("sorter", SORTING, SORTER_CONFIG, SORTER_SETTINGS, init_seed=0),
        Recipe("sorter-cheater", SORTING, replace(SORTER_CONFIG, causal=False), SORTER_SETTINGS, init_seed=0),
        Recipe("reverser", REVERSAL, REVERSER_CONFIG, REVERSER_SETTINGS, init_seed=0),
    )
}
