"""The forward-pass gate: however many sessions ask for new traced runs at once, at most
`MAX_CONCURRENT_FORWARDS` forward passes run; the others wait their turn, and a cached run never waits.

No timing is measured: the forward pass is replaced by one that blocks until the test lets it go, and the
test waits until every thread has either entered it or is held at the gate before it counts."""

from __future__ import annotations

import os
import threading
from types import SimpleNamespace

import pytest

from lessons.common.ui import loaders

HANG_GUARD_S = 60  # only against a test that would otherwise hang; never reached when the gate works


class WatchedGate(threading.BoundedSemaphore):
    """The gate's own kind of semaphore, counting the threads it is holding back right now."""

    def __init__(self, value: int, changed: threading.Condition):
        super().__init__(value)
        self.waiting = 0
        self.changed = changed

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if super().acquire(blocking=False):
            return True
        self._count(+1)
        try:
            return super().acquire(blocking, timeout)
        finally:
            self._count(-1)

    __enter__ = acquire

    def _count(self, change: int) -> None:
        with self.changed:
            self.waiting += change
            self.changed.notify_all()


class BlockingForward:
    """Stands in for `run_encoder`: records how many passes run at once and holds each until released."""

    def __init__(self, changed: threading.Condition):
        self.running = self.most_at_once = self.finished = 0
        self.changed = changed
        self.release = threading.Event()

    def __call__(self, model, tokenizer, text, pair=None, max_tokens=None):
        with self.changed:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            self.changed.notify_all()
        self.release.wait(HANG_GUARD_S)
        with self.changed:
            self.running -= 1
            self.finished += 1
            self.changed.notify_all()
        return f"run of {text}"


@pytest.fixture
def blocking_forward(monkeypatch):
    changed = threading.Condition()  # notified whenever a thread enters or leaves a pass or the gate's queue
    forward, gate = BlockingForward(changed), WatchedGate(loaders.MAX_CONCURRENT_FORWARDS, changed)
    fake_model = SimpleNamespace(model=None, tokenizer=None, config=SimpleNamespace(longest_input=512))
    monkeypatch.setattr(loaders, "run_encoder", forward)
    monkeypatch.setattr(loaders, "FORWARD_GATE", gate)
    monkeypatch.setattr(loaders, "get_model", lambda reference="": fake_model)
    loaders._traced_run.clear()
    yield forward, gate
    forward.release.set()
    loaders._traced_run.clear()


def ask_in_threads(texts: list[str], results: dict) -> list[threading.Thread]:
    def ask(text: str) -> None:
        results[text] = loaders._traced_run("", text, None, 512)

    threads = [threading.Thread(target=ask, args=(text,), daemon=True) for text in texts]
    for thread in threads:
        thread.start()
    return threads


def test_the_gate_is_sized_to_the_cores_between_one_and_four():
    assert loaders.MAX_CONCURRENT_FORWARDS == max(1, min(4, os.cpu_count() or 1))
    assert isinstance(loaders.FORWARD_GATE, threading.BoundedSemaphore)


def test_three_more_sessions_than_the_gate_admits_wait_until_a_forward_pass_ends(blocking_forward):
    forward, gate = blocking_forward
    admitted = loaders.MAX_CONCURRENT_FORWARDS
    texts = [f"student {index} types a sentence" for index in range(admitted + 3)]
    results: dict[str, str] = {}
    threads = ask_in_threads(texts, results)

    with forward.changed:  # settled: every thread is in a forward pass or held at the gate
        assert forward.changed.wait_for(lambda: forward.running + gate.waiting == len(texts), HANG_GUARD_S)
    assert (forward.running, gate.waiting) == (admitted, 3)

    forward.release.set()
    for thread in threads:
        thread.join(HANG_GUARD_S)
    assert forward.finished == len(texts) and forward.most_at_once == admitted
    assert results == {text: f"run of {text}" for text in texts}


def test_a_cached_run_is_handed_out_while_the_gate_is_full(blocking_forward):
    forward, gate = blocking_forward
    forward.release.set()
    cached = loaders._traced_run("", "a sentence seen before", None, 512)
    forward.release.clear()
    held = [gate.acquire() for _ in range(loaders.MAX_CONCURRENT_FORWARDS)]  # every place taken
    try:
        assert loaders._traced_run("", "a sentence seen before", None, 512) is cached
        assert forward.finished == 1
    finally:
        for _ in held:
            gate.release()
