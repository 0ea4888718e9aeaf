"""Where the server's memory goes: every lesson opened in turn with a 512-token text, in one process, and after
each page the resident set, its peak during that page, and the bytes held by each `st.cache_resource` function.

    python benchmarks/memory_profile.py [--tokens 512] [--pages tokenization,attention] [--more-views]
        [--students 40] [--glibc-defaults | --mmap-threshold BYTES] [--no-trim]

The allocator options compare glibc's settings (see lessons/common/memory.py); --more-views opens the tabs
and toggles whose caches hold the most per entry; --students opens every lesson with many short texts.

The app runs in this process through Streamlit's AppTest, so its caches are the ones a server would hold
(one model and one set of caches for every session). Bytes held are counted per cache: torch tensors by
their storage (a view shares its base's), numpy arrays by their buffer, everything else by
`sys.getsizeof` over the objects it reaches; an object reached from two caches counts in the first. The
resident set (VmRSS) is the process's: glibc may keep freed memory, so RSS can stay above what the caches
hold. This attributes memory; `benchmarks/cold_start.py` measures the real server.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import types
from pathlib import Path

import numpy as np
import torch
from browser_support import megabytes, reset_peak, status_kb, text_of_exactly
from streamlit.runtime.caching import cache_resource_api

from anatomy.checkpoints.pretrained import load_pretrained
from harness.apptest import open_page
from harness.room import student_text
from harness.views import LESSONS
from lessons.common import memory

ROOT = Path(__file__).resolve().parents[1]

# Views beyond each page's default one whose cached results are the largest at 512 tokens.
MORE_VIEWS = [
    ("attention", {"att_source": "model", "att_full": "true"}),
    ("attention", {"att_source": "embeddings"}),
    ("multihead", {"mh_tab": "Head statistics"}),
    ("multihead", {"mh_tab": "Switch a head off"}),
    ("multihead", {"mh_tab": "Split and recombine"}),
    ("multihead", {"mh_full": "true"}),
    ("causal", {"cm_tab": "One head on your text", "cm_full": "true"}),
    ("causal", {"cm_tab": "No mask, padding, causal"}),
    ("tokenization", {"tok_tab": "Tokens → vectors"}),
    ("positional", {"pos_tab": "Similarity between positions"}),
    ("encoder", {"enc_layer": "3", "enc_head": "5"}),
]


def resident_mb() -> float:
    return megabytes(status_kb("self", "VmRSS"))


def peak_mb() -> float:
    return megabytes(status_kb("self", "VmHWM"))


def bytes_reachable(root, seen_objects: set[int], seen_storages: set[int]) -> int:
    """Bytes of everything `root` reaches that was not counted before (tensors and arrays by their buffers)."""
    total, todo = 0, [root]
    while todo:
        item = todo.pop()
        if id(item) in seen_objects or isinstance(item, (type, types.ModuleType, types.FunctionType)):
            continue
        seen_objects.add(id(item))
        if isinstance(item, torch.Tensor):
            storage = item.untyped_storage()
            if storage.data_ptr() not in seen_storages:
                seen_storages.add(storage.data_ptr())
                total += storage.nbytes()
            continue
        if isinstance(item, np.ndarray):
            base = item if item.base is None else item.base
            if id(base) not in seen_storages:
                seen_storages.add(id(base))
                total += getattr(base, "nbytes", item.nbytes)
            continue
        total += sys.getsizeof(item, 0)
        todo.extend(gc.get_referents(item))
    return total


def cache_report() -> list[tuple[str, int, float]]:
    """(function, entries, MB) for every resource cache, the model's first so that it is counted once."""
    caches = [
        cache for by_key in cache_resource_api._resource_caches._function_caches.values() for cache in by_key.values()
    ]
    caches.sort(key=lambda cache: "_load_model" not in cache.display_name)
    seen_objects: set[int] = set()
    seen_storages: set[int] = set()
    rows = []
    for cache in caches:
        values = [result.value for result in list(cache._mem_cache.values())]
        size = sum(bytes_reachable(value, seen_objects, seen_storages) for value in values)
        rows.append((cache.display_name.rsplit(".", 1)[-1], len(values), size / 1e6))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--pages", default=",".join(name for name in LESSONS if name != "home"))
    parser.add_argument(
        "--glibc-defaults",
        action="store_true",
        help="leave malloc as glibc sets it (app.py's configure_allocator does nothing)",
    )
    parser.add_argument(
        "--more-views",
        action="store_true",
        help="then the other tabs and full-size toggles, whose caches hold the most per entry",
    )
    parser.add_argument(
        "--students",
        type=int,
        default=0,
        help="then every lesson once with each of this many students' texts (as load_test.py)",
    )
    parser.add_argument("--mmap-threshold", type=int, help="bytes (default: memory.MMAP_THRESHOLD_BYTES)")
    parser.add_argument("--no-trim", action="store_true", help="never call malloc_trim")
    arguments = parser.parse_args()
    if arguments.glibc_defaults:
        memory._configured = True  # as if done: app.py's call then changes nothing
    if arguments.mmap_threshold:
        memory.MMAP_THRESHOLD_BYTES = arguments.mmap_threshold
    if arguments.no_trim:
        memory.trim = lambda: None

    print(f"RSS at start (imports done): {resident_mb():.0f} MB")
    text = text_of_exactly(load_pretrained(device="cpu").tokenizer, arguments.tokens)
    gc.collect()
    memory.trim()
    print(f"RSS after the benchmark's own tokenizer: {resident_mb():.0f} MB")
    open_page("lesson_pages/home.py")
    gc.collect()
    print(f"{'home (model loaded)':<28}{resident_mb():>8.0f} MB")
    views = [(name, LESSONS[name].query) for name in arguments.pages.split(",")]
    if arguments.more_views:
        views += MORE_VIEWS
    for name, query in views:
        reset_peak("self")
        start = time.perf_counter()
        app = open_page(f"lesson_pages/{name}.py", text, {key: str(value) for key, value in query.items()})
        assert not app.exception, [item.value for item in app.exception]
        seconds = time.perf_counter() - start
        gc.collect()
        changed = {key: value for key, value in query.items() if LESSONS[name].query.get(key) != value}
        label = name + "".join(f" {key}={value}" for key, value in changed.items())
        print(f"{label:<28}{resident_mb():>8.0f} MB  (peak {peak_mb():.0f} MB, {seconds:.1f} s)")
        for function, entries, size in cache_report():
            if size >= 0.5:
                print(f"    {function:<32}{entries:>3} entries {size:>8.1f} MB")
    if arguments.students:
        reset_peak("self")
        start = time.perf_counter()
        for session in range(arguments.students):
            for name in (name for name in LESSONS if name != "home"):
                query = {key: str(value) for key, value in LESSONS[name].query.items()}
                open_page(f"lesson_pages/{name}.py", student_text(session, 0), query)
        gc.collect()
        print(
            f"{f'{arguments.students} students':<28}{resident_mb():>8.0f} MB  (peak {peak_mb():.0f} MB, "
            f"{time.perf_counter() - start:.0f} s)"
        )
        for function, entries, size in cache_report():
            print(f"    {function:<32}{entries:>3} entries {size:>8.1f} MB")
    print(f"final RSS {resident_mb():.0f} MB")


if __name__ == "__main__":
    main()
