"""What BERT was pre-trained to do: guess the word behind each [MASK] of a text (Devlin et al., 2019, §3.1).

The encoder reads the whole text at once, so the guess at a masked position uses the words on both sides.
The masked-LM head turns each masked position's final vector into one score per vocabulary word; a softmax
makes them probabilities. Computed from the lesson's traced run (no second forward pass); no Streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from anatomy.checkpoints.pretrained import DEFAULT_MODEL_NAME, PretrainedModel
from anatomy.models import Encoder
from lessons.common.runs import EncoderRun
from lessons.encoder import analysis, text

MAX_MASKS_SHOWN = 6  # a text may hold many masks; the view fills the first few, and says how many it left
MASK_TOKENS = ("[MASK]", "<mask>")  # BERT's and DistilBERT's, RoBERTa's: what the text box hint names


@dataclass(frozen=True)
class MaskFill:
    """The most probable words at one masked position."""

    position: int  # the [MASK]'s index among the text's tokens ([CLS] is 0)
    token_ids: tuple[int, ...]  # the k best, most probable first
    tokens: tuple[str, ...]
    probabilities: tuple[float, ...]


@dataclass(frozen=True)
class FilledText:
    """Every [MASK] of a text, the first few of them filled."""

    mask_token: str  # as this checkpoint's tokenizer writes it: "[MASK]" or "<mask>"
    num_masks: int  # how many the text holds (after any cut to the model's length)
    fills: tuple[MaskFill, ...]  # the first MAX_MASKS_SHOWN, in text order

    @property
    def left_out(self) -> int:
        return self.num_masks - len(self.fills)


def mask_token_of(tokenizer) -> str | None:
    """The tokenizer's mask token, or None if it has none (a decoder's tokenizer)."""
    token = getattr(tokenizer, "mask_token", None)
    return token if isinstance(token, str) and tokenizer.mask_token_id is not None else None


def fill_masks(model: Encoder, run: EncoderRun, tokenizer, top_k: int) -> FilledText:
    """The `top_k` most probable words at each of the first MAX_MASKS_SHOWN masked positions of `run`.

    Only the masked positions go through the head: each costs one (D) × (D, V) product, where scoring every
    position would cost T of them."""
    mask_token = mask_token_of(tokenizer)
    if mask_token is None:
        raise ValueError("this tokenizer has no mask token")
    mask_id = tokenizer.mask_token_id
    positions = [index for index, token_id in enumerate(run.tokenized.input_ids) if token_id == mask_id]
    shown = positions[:MAX_MASKS_SHOWN]
    if not shown:
        return FilledText(mask_token, 0, ())
    with torch.inference_mode():
        hidden = run.output.last_hidden_state[0, shown]  # (M, D): the final vectors at the masks
        probabilities = model.masked_lm_logits(hidden[None])[0].float().softmax(dim=-1)  # (M, V)
        best = probabilities.topk(min(top_k, probabilities.size(-1)), dim=-1)  # (M, k) each
    fills = []
    for position, ids, values in zip(shown, best.indices.tolist(), best.values.tolist()):
        tokens = tuple(str(token) for token in tokenizer.convert_ids_to_tokens(ids))
        fills.append(MaskFill(position, tuple(ids), tokens, tuple(values)))
    return FilledText(mask_token, len(positions), tuple(fills))


def why_no_fill(pretrained: PretrainedModel) -> str | None:
    """Why this checkpoint fills no mask, in the lesson's words (it has no masked-LM head, or its tokenizer no
    mask token); None when it can fill one."""
    if not pretrained.has_masked_lm_head or mask_token_of(pretrained.tokenizer) is None:
        return text.no_masked_lm_head(pretrained.name == DEFAULT_MODEL_NAME)
    return None


def fill_the_text(pretrained: PretrainedModel, run: EncoderRun, top_k: int) -> FilledText | str:
    """The masks of `run` filled by the checkpoint's head (`fill_masks`), or, when there is nothing to fill,
    the sentence saying what would change that: a checkpoint with a head, a mask written in the text."""
    why_not = why_no_fill(pretrained)
    if why_not is not None:
        return why_not
    filled = fill_masks(analysis.encoder_body(pretrained.model), run, pretrained.tokenizer, top_k)
    return filled if filled.fills else text.no_mask_in_text(filled.mask_token)


def filled_in(run: EncoderRun, filled: FilledText, tokenizer) -> str:
    """The text as the model reads it, each filled mask replaced by its most probable word."""
    ids = list(run.tokenized.input_ids)
    for fill in filled.fills:
        ids[fill.position] = fill.token_ids[0]
    return str(tokenizer.decode(ids, skip_special_tokens=True))


def context_of(run: EncoderRun, position: int, words_each_side: int = 4) -> str:
    """The tokens around a position, the position itself marked: "capital of france is ▢ ." (for a caption)."""
    tokens = run.tokenized.tokens
    before = tokens[max(1, position - words_each_side) : position]  # not [CLS]
    after = tokens[position + 1 : position + 1 + words_each_side]
    after = tuple(token for token in after if token not in ("[SEP]", "</s>"))
    return " ".join((*before, "▢", *after))
