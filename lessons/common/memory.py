"""Keeping the server's resident memory within a free hosting tier's limit (700 MB).

Two things make it grow. First, cached results: a traced 512-token MiniLM run holds 42 MB, a 10-token one
0.8 MB, so the traced-run cache is bounded by bytes (`ByteBudget`), not only by a count of entries.
Second, memory that was freed but never handed back: a traced run allocates and frees hundreds of megabytes
of tensors, and glibc's malloc keeps much of it. Blocks above the mmap threshold are returned when freed,
but glibc raises that threshold to the size of each large block freed (up to 32 MB), so soon every tensor
comes from a heap, where one live block near the top pins everything beneath it; and each thread
(Streamlit runs every session's script in its own) may get its own heap. `configure_allocator`, called
first thing in app.py, keeps the threshold fixed and caps the heaps at two; `trim` returns what the heaps
still hold after a big run. With a 512-token text opened on every lesson, this alone took the app from 907
to 686 MB (`benchmarks/memory_profile.py`, before traces were made smaller); the price is page faults on
fresh memory: a new 512-token traced run takes about 190 ms instead of 110 (see MMAP_THRESHOLD_BYTES).

Nothing here changes a number the app computes. On a C library other than glibc the allocator calls do
nothing. This module imports no streamlit, so it can be tested on its own.
"""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

import torch

# mallopt parameters, from glibc's <malloc.h>
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
# Every block from 128 KiB up (glibc's own starting value, now kept) is mmapped, so returned when freed.
# Measured (a traced forward at 142 / 512 tokens; the app's RSS after a 512-token text on every lesson,
# benchmarks/memory_profile.py): glibc's dynamic default 28 / 110 ms, 694 MB; 128 KiB 40 / 194 ms,
# 605-611 MB; 1 MiB 32 / 180 ms, 615-660 MB (its heap fragments: (T, D) tensors at 512 tokens are 0.8 MB).
MMAP_THRESHOLD_BYTES = 128 * 1024
ARENA_MAX = 2


def _glibc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018 - raises AttributeError outside glibc (musl)
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _glibc()
_configured = False


def configure_allocator() -> bool:
    """Fix glibc's mmap threshold and cap its arenas, once per process. True when glibc accepted both."""
    global _configured
    if _LIBC is None:
        return False
    if not _configured:
        _configured = bool(_LIBC.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
            _LIBC.mallopt(M_ARENA_MAX, ARENA_MAX)
        )
    return _configured


def trim() -> None:
    """Hand the free memory at the top and in the holes of every malloc heap back to the system."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


# Modules imported after the models loaded go on being walked by every full collection. Some come late and in
# bulk: torch.optim's first step (lesson 8's Train button) imports torch._dynamo, and with it sympy, some 800
# modules and 150,000 objects; until they were exempted too, every later run of every page spent 0.13 s
# walking them, over half the server's CPU time under a room of students (benchmarks/server_cpu_ab.py).
LATE_MODULES_WORTH_EXEMPTING = 20
_modules_when_exempted = 0
_exemption_lock = threading.Lock()


def exempt_from_garbage_collection() -> None:
    """Move every object alive now out of reach of Python's cyclic garbage collector, for good.

    A full collection (`gc.collect(2)`: the app's every few seconds, see `collect_garbage_now_and_then`) walks
    every container object in the process: with torch, transformers, plotly and a model loaded that is some
    300,000 objects, 200-250 ms on this machine, during which the server sends nothing.
    Called once the models are loaded, this leaves a collection only the objects made since to walk. The
    objects exempted (modules, a model's weights and layers) live as long as the process anyway; ones in
    reference cycles that die later are never freed, so garbage is collected first.
    """
    global _modules_when_exempted
    with _exemption_lock:
        gc.collect()
        gc.freeze()
        _modules_when_exempted = len(sys.modules)


def exempt_late_imports() -> bool:
    """Exempt the modules imported since the last exemption (as `exempt_from_garbage_collection` does) when
    there are many of them; True when it did. Cheap otherwise, so it can run at the start of every page run."""
    if _modules_when_exempted == 0 or len(sys.modules) - _modules_when_exempted < LATE_MODULES_WORTH_EXEMPTING:
        return False
    exempt_from_garbage_collection()
    return True


# Streamlit collects garbage in full after every run of every session's script (its `runner.postScriptGC`).
# Under a class that is several full collections a second, each walking every object the caches and the
# sessions hold (traced runs, figures, widget states): 10-13 % of the server's CPU under a room of students
# (benchmarks/server_cpu_ab.py --profile), 2 % with this instead. .streamlit/config.toml turns it off, and
# this takes its place: one full collection every FULL_COLLECTION_SECONDS, in a thread of its own, while
# pages run.
# Garbage caught in reference cycles still goes within seconds; an idle server collects nothing.
FULL_COLLECTION_SECONDS = 5.0
_a_page_ran = threading.Event()
_collector_lock = threading.Lock()
_collector: threading.Thread | None = None


def collect_garbage_now_and_then(interval_seconds: float = FULL_COLLECTION_SECONDS) -> None:
    """Note that a page is running, so that a full collection follows within `interval_seconds` (the first
    call starts the collecting thread; later calls only take note)."""
    global _collector
    _a_page_ran.set()
    with _collector_lock:
        if _collector is None or not _collector.is_alive():
            _collector = threading.Thread(
                target=_collect_while_pages_run, args=(interval_seconds,), name="garbage-collector", daemon=True
            )
            _collector.start()


def _collect_while_pages_run(interval_seconds: float) -> None:
    while True:
        time.sleep(interval_seconds)
        if _a_page_ran.is_set():
            _a_page_ran.clear()
            gc.collect(2)


def tensor_bytes(value) -> int:
    """Bytes of every tensor reachable from `value` through dataclasses, tuples, lists and dicts; a tensor
    counts once however many views of it there are (Q, K and V of a head are views of one projection)."""
    storages: dict[int, int] = {}
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, torch.Tensor):
            storage = item.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            todo.extend(getattr(item, field.name) for field in dataclasses.fields(item))
        elif isinstance(item, (tuple, list)):
            todo.extend(item)
        elif isinstance(item, dict):
            todo.extend(item.values())
    return sum(storages.values())


Key = TypeVar("Key", bound=Hashable)


class ByteBudget(Generic[Key]):
    """Which entries a cache should drop, least recently used first, to keep their bytes within a budget.

    The cache reports every value it hands out (`use`) and every value it dropped on its own (`release`, e.g.
    from st.cache_resource's on_release); `use` answers with the keys to drop. The entry just used is always
    kept, even alone over the budget. Thread-safe: every browser session reads the same cache.
    """

    def __init__(self, budget_bytes: int, max_entries: int | None = None, measure=tensor_bytes):
        self.budget_bytes = budget_bytes
        self.max_entries = max_entries
        self._measure = measure
        self._entries: OrderedDict[Key, tuple[int, int]] = OrderedDict()  # key -> (bytes, id of the value)
        self._lock = threading.Lock()

    def use(self, key: Key, value) -> list[Key]:
        """Note that `value`, cached under `key`, was just used; return the keys to drop, oldest first."""
        with self._lock:
            known = self._entries.get(key)
            if known is None or known[1] != id(value):
                self._entries[key] = (self._measure(value), id(value))
            self._entries.move_to_end(key)
            total, dropped = self._total(), []
            for old in list(self._entries)[:-1]:
                if total <= self.budget_bytes and (self.max_entries is None or len(self._entries) <= self.max_entries):
                    break
                total -= self._entries.pop(old)[0]
                dropped.append(old)
            return dropped

    def release(self, value) -> None:
        """The cache dropped `value` (the object itself, still alive while it is being released)."""
        with self._lock:
            for key, (_, identity) in list(self._entries.items()):
                if identity == id(value):
                    del self._entries[key]

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def total_bytes(self) -> int:
        with self._lock:
            return self._total()

    def _total(self) -> int:
        return sum(size for size, _ in self._entries.values())
