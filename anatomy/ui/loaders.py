"""The model is loaded once per server process and shared by every browser session; results of a
forward pass are cached per (model, text). Nothing returned from here may be mutated by a page.

This is also where one visitor's trouble stays that visitor's: a device that is not there falls back to the
CPU, a model that will not load falls back to the embedded one, and a forward pass that runs out of memory
ends that visitor's page with a message while the server goes on serving everyone else.
"""

from __future__ import annotations

import gc
import hashlib

import streamlit as st
import torch

from anatomy.analysis import EncoderRun, run_encoder
from anatomy.devices import DeviceUnavailableError, choose_device
from anatomy.pretrained import DEFAULT_MODEL_NAME, ModelLoadError, PretrainedModel, load_pretrained
from anatomy.ui import hosting
from anatomy.ui.widgets import escape_markdown

MAX_CACHED_RUNS = 8  # traced runs kept in memory (a 512-token MiniLM trace is about 160 MB)


def get_model(reference: str = "") -> PretrainedModel:
    """The model for a reference ("" or the default name: the embedded one). Raises ModelLoadError."""
    return _load_model(reference.strip() or DEFAULT_MODEL_NAME, _usable_device())


@st.cache_resource(show_spinner="Loading the model (once per server)…")
def _load_model(reference: str, device: str) -> PretrainedModel:
    # One cache entry per distinct model and device: callers normalise both first. Errors are not cached.
    return load_pretrained(reference, device=device)


def _usable_device() -> str:
    """The device $ANATOMY_DEVICE asks for, or the CPU when this machine lacks it (see `device_problem`)."""
    try:
        return str(choose_device())
    except DeviceUnavailableError:
        return "cpu"


def device_problem() -> str | None:
    """Why the requested device is not used (the models then run on the CPU), or None."""
    try:
        choose_device()
    except DeviceUnavailableError as error:
        return str(error)
    return None


def try_get_model(reference: str) -> tuple[PretrainedModel, str | None]:
    """The requested model, or the embedded default plus the reason the requested one failed.

    Any failure of a requested model counts (a folder can be broken in ways no loader foresees); a failure
    of the embedded model itself is raised, since there is nothing left to fall back on.
    """
    try:
        return get_model(reference), None
    except ModelLoadError as error:
        problem = str(error)
    except Exception as error:  # noqa: BLE001 - a broken folder must not take the page down
        problem = f"{reference!r} could not be loaded ({type(error).__name__}: {error})."
    if hosting.normalise_reference(reference) == hosting.EMBEDDED:
        raise ModelLoadError(problem)
    return get_model(DEFAULT_MODEL_NAME), problem


def get_encoder_run(reference: str, text: str, pair: str | None = None) -> EncoderRun:
    """A traced forward pass of the model named `reference` over `text` (and an optional second sentence).

    In hosted mode text over the length cap is refused here too, so that no page's own text field can send
    the model more than the sidebar may. A refusal or an out-of-memory error shows a message and stops
    this run of the page (st.stop); the next run, and every other session, goes on as usual.
    """
    settings = hosting.current()
    for piece, what in ((text, "The text"), (pair, "The second sentence")):
        problem = settings.text_problem(piece, what)
        if problem:
            _stop_with(problem, ":material/content_cut:")
    try:
        return _traced_run(reference, text, pair, settings.max_input_tokens)
    except Exception as error:
        if not is_out_of_memory(error):
            raise
        release_memory()
        _stop_with(
            f"The model ran out of memory on this input ({len(text) + len(pair or ''):,} characters). Try a "
            "shorter text; nothing else is affected, and the next run starts afresh.",
            ":material/memory:",
        )


@st.cache_resource(max_entries=MAX_CACHED_RUNS, show_spinner="Running the model…")
def _traced_run(reference: str, text: str, pair: str | None, token_cap: int | None) -> EncoderRun:
    pretrained = get_model(reference)
    max_tokens = min(token_cap, pretrained.config.max_positions) if token_cap else None
    return run_encoder(pretrained.model, pretrained.tokenizer, text, pair, max_tokens=max_tokens)


def is_out_of_memory(error: BaseException) -> bool:
    """An allocation failure of torch (CUDA, MPS or CPU) or of Python itself."""
    if isinstance(error, (torch.OutOfMemoryError, MemoryError)):
        return True
    message = str(error).lower()
    return isinstance(error, RuntimeError) and ("out of memory" in message or "can't allocate memory" in message)


def release_memory() -> None:
    """Give back what a failed forward pass left behind, so the next one starts with room."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _stop_with(message: str, icon: str):
    st.error(escape_markdown(message), icon=icon)
    st.stop()


def shared_model_fingerprint(reference: str = "") -> str:
    """The fingerprint of the model every session shares: equal before and after a load test proves that
    no session (ablation, live training) changed the weights everyone reads."""
    return weights_fingerprint(get_model(reference).model)


def weights_fingerprint(model: torch.nn.Module) -> str:
    """SHA-256 over every parameter and buffer, names included, bit for bit."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()
