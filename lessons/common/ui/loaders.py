"""The model is loaded once per server process and shared by every browser session; results of a
forward pass are cached per (model, text). Nothing returned from here may be mutated by a page.

This is also where one visitor's trouble stays that visitor's: a device that is not there falls back to the
CPU, a model that will not load falls back to the embedded one, and a forward pass that runs out of memory
ends that visitor's page with a message while the server goes on serving everyone else.
"""

from __future__ import annotations

import gc
import hashlib
import os
import threading
from collections.abc import Callable
from typing import NoReturn, TypeVar

import streamlit as st
import torch

from anatomy.checkpoints.pretrained import DEFAULT_MODEL_NAME, ModelLoadError, PretrainedModel, load_pretrained
from anatomy.devices import DeviceUnavailableError, choose_device
from anatomy.models import DecoderOnlyLM
from anatomy.training.recipes import RECIPES
from lessons.common import decoder_attention, hosting, memory
from lessons.common.llm.smollm2 import ChatModel, as_pretrained, load_chat_model
from lessons.common.runs import EncoderRun, run_encoder
from lessons.common.safe_text import escape_markdown
from lessons.common.ui import linked

T = TypeVar("T")
RunKey = tuple[str, str, str | None, int | None]  # reference, text, second sentence, token cap

# Traced runs kept in memory: at most this many, holding at most this many bytes together (a 512-token
# MiniLM trace holds 42 MB, a 10-token one 0.8 MB), the run just used always kept. The server holds about
# 460 MB once the model is loaded (torch alone is 220 MB), so the bytes leave room for one 512-token run plus
# shorter ones, the pages' own caches and a forward pass in progress within a free tier's 700 MB. The count
# is a class's worth of texts: with only 8, sixteen students typing their own texts pushed each other's out
# within seconds, and a text was traced again on the student's next page (benchmarks/server_cpu_ab.py).
MAX_CACHED_RUNS = 64
MAX_CACHED_RUN_BYTES = 128 * 2**20

# New traced runs computed at once, across every session. Streamlit runs each session's script in a thread of
# its own, so forty students typing at once would start forty forward passes, each holding its activations
# (up to a few hundred MB at 512 tokens) until it ends. More passes than cores finish no sooner, since they
# share the cores; they only hold more memory. So the rest wait here, and the server's peak memory depends
# on the number of cores, not of visitors. Four at most on a bigger machine: each pass already spreads over
# torch's own threads.
MAX_CONCURRENT_FORWARDS = max(1, min(4, os.cpu_count() or 1))
FORWARD_GATE = threading.BoundedSemaphore(MAX_CONCURRENT_FORWARDS)


def get_model(reference: str = "") -> PretrainedModel:
    """The model for a reference ("" or the default name: the embedded encoder; `hosting.LANGUAGE_MODEL`: the
    embedded SmolLM2, the very weights lesson 9 uses). Raises ModelLoadError."""
    if hosting.normalise_reference(reference) == hosting.LANGUAGE_MODEL:
        if not hosting.current().language_model:
            raise ModelLoadError(LANGUAGE_MODEL_OFF)
        return _language_model_as_pretrained(usable_device())
    return _load_model(reference.strip() or DEFAULT_MODEL_NAME, usable_device())


@st.cache_resource(show_spinner="Loading the model (once per server)…")
def _load_model(reference: str, device: str) -> PretrainedModel:
    # One cache entry per distinct model and device: callers normalise both first. Errors are not cached.
    pretrained = load_pretrained(reference, device=device)
    memory.exempt_from_garbage_collection()
    return pretrained


def get_chat_model() -> ChatModel:
    """SmolLM2-135M-Instruct with its tokenizer, loaded once per server process. Raises ModelLoadError."""
    return _load_chat_model(usable_device())


@st.cache_resource(show_spinner="Loading SmolLM2-135M (4-bit weights, dequantized)…")
def _load_chat_model(device: str) -> ChatModel:
    # About 540 MB once dequantized to float32, on top of the embedded encoder: one copy serves every session.
    try:
        chat_model = load_chat_model(device=device)
    except ModelLoadError:
        raise
    except Exception as error:  # a damaged file or a gguf version this reader does not know
        raise ModelLoadError(f"SmolLM2 could not be loaded ({type(error).__name__}: {error}).") from error
    memory.exempt_from_garbage_collection()
    return chat_model


@st.cache_resource(show_spinner=False)
def _language_model_as_pretrained(device: str) -> PretrainedModel:
    # The same weights as get_chat_model's (no second copy), with a tokenizer the other lessons can call.
    return as_pretrained(_load_chat_model(device), hosting.LANGUAGE_MODEL)


LANGUAGE_MODEL_OFF = (
    "This hosted demo leaves SmolLM2 off: it needs about 540 MB of memory more than the other lessons "
    "together. Run the app on your own machine to try it (see the README), or ask the server's operator "
    f"to set {hosting.LANGUAGE_MODEL_VARIABLE}=1."
)


def decoder_token_cap(model: DecoderOnlyLM) -> int:
    """Tokens of a text the decoder lessons read with this model here: all its positions on a CUDA GPU, 512
    elsewhere (`decoder_attention.max_tokens`), at most the host's cap."""
    return hosting.current().token_limit(decoder_attention.max_tokens(model))


def chat_model_or_stop() -> ChatModel:
    """SmolLM2, or a message for this visitor saying why it is not there, and the end of this run of the page."""
    if not hosting.current().language_model:
        st.info(LANGUAGE_MODEL_OFF, icon=":material/memory:")
        linked.stop()
    try:
        return get_chat_model()
    except ModelLoadError as error:
        _stop_with(f"This lesson needs SmolLM2-135M, which this server cannot load: {error}", ":material/error:")


def usable_device() -> str:
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
    except Exception as error:
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
    key = (reference, text, pair, settings.max_input_tokens)
    run = unless_out_of_memory(lambda: _traced_run(*key), len(text) + len(pair or ""))
    _keep_within_budget(key, run)
    return run


def unless_out_of_memory(compute: Callable[[], T], characters: int) -> T:
    """`compute()`; if it runs out of memory, a message for this visitor ends this run of the page (st.stop),
    and the next run, like every other session, starts afresh."""
    try:
        return compute()
    except Exception as error:
        if not is_out_of_memory(error):
            raise
        release_memory()
        _stop_with(
            f"The model ran out of memory on this input ({characters:,} characters). Try a shorter text; "
            "nothing else is affected, and the next run starts afresh.",
            ":material/memory:",
        )


def _forget_run(run: EncoderRun) -> None:
    _RUN_BUDGET.release(run)


@st.cache_resource(max_entries=MAX_CACHED_RUNS, show_spinner="Running the model…", on_release=_forget_run)
def _traced_run(reference: str, text: str, pair: str | None, token_cap: int | None) -> EncoderRun:
    # Only a cache miss gets here: a cached run is handed out without waiting at the gate.
    pretrained = get_model(reference)
    max_tokens = min(token_cap, pretrained.config.longest_input) if token_cap else None
    with FORWARD_GATE:
        return run_encoder(pretrained.model, pretrained.tokenizer, text, pair, max_tokens=max_tokens)


_RUN_BUDGET: memory.ByteBudget[RunKey] = memory.ByteBudget(MAX_CACHED_RUN_BYTES, max_entries=MAX_CACHED_RUNS)


def _keep_within_budget(key: RunKey, run: EncoderRun) -> None:
    """Drop the least recently used traced runs while they hold more than MAX_CACHED_RUN_BYTES together.

    A session still showing a dropped run keeps it until its page has run; the next use computes it again.
    After a new run, the memory its forward pass used in passing is handed back to the system.
    """
    is_new = key not in _RUN_BUDGET
    for stale in _RUN_BUDGET.use(key, run):
        _traced_run.clear(*stale)
    if is_new:
        memory.trim()


def is_out_of_memory(error: BaseException) -> bool:
    """An allocation failure of torch (CUDA, MPS or CPU) or of Python itself."""
    if isinstance(error, (torch.OutOfMemoryError, MemoryError)):
        return True
    message = str(error).lower()
    return isinstance(error, RuntimeError) and ("out of memory" in message or "can't allocate memory" in message)


def release_memory() -> None:
    """Give back what a failed forward pass left behind, so the next one starts with room."""
    gc.collect()
    memory.trim()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _stop_with(message: str, icon: str) -> NoReturn:
    st.error(escape_markdown(message), icon=icon)
    linked.stop()


def shared_model_fingerprint(shared: str | None = None) -> str:
    """The fingerprint of a model every session shares: the embedded one, a model trained here named `shared`
    ("sorter", "sorter-cheater", "reverser"), or lesson 9's SmolLM2 (`hosting.LANGUAGE_MODEL`, where this server
    serves it; ModelLoadError otherwise). Equal before and after a load test, it proves that no session
    (ablation, live training, writing) changed the weights everyone reads. Anything else names the embedded one."""
    if shared in RECIPES:
        return weights_fingerprint(get_model(str(RECIPES[shared].folder)).model)
    if shared is not None and hosting.normalise_reference(shared) == hosting.LANGUAGE_MODEL:
        return weights_fingerprint(get_model(hosting.LANGUAGE_MODEL).model)
    return weights_fingerprint(get_model("").model)


def weights_fingerprint(model: torch.nn.Module) -> str:
    """SHA-256 over every parameter and buffer, names included, bit for bit."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()
