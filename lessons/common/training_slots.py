"""How many live trainings this server runs at once: one.

Streamlit runs each browser session's script in its own thread, and torch lets go of Python's lock inside
its operations, so one session training a model does not freeze the others. But a training run keeps every
core it is given busy: on a shared two-core server, ten students pressing *Train* at once would make every
page crawl for everyone, and ten runs sharing the cores finish no sooner than ten runs one after another.
So trainings take turns. A session that finds the slot taken says so and waits, redrawing its notice
every half second (which is also where Streamlit can stop the wait when the student clicks something
else), and gives up politely after `WAIT_LIMIT_S`.

The semaphore below is the one piece of process-wide state in the app that is there on purpose.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

MAX_CONCURRENT_TRAININGS = 1
WAIT_LIMIT_S = 90.0  # three hosted runs of 30 s; after that the student is asked to try again later
POLL_S = 0.5

_SLOTS = threading.BoundedSemaphore(MAX_CONCURRENT_TRAININGS)


@contextmanager
def training_slot(notice, wait_limit_s: float | None = None) -> Iterator[bool]:
    """Hold a training slot for the `with` block; yields False when none came free within the wait limit.

    `notice` is a Streamlit placeholder (st.empty()) that tells a waiting student why nothing happens yet.
    The slot is given back however the block ends: normally, by an error, or by Streamlit stopping the
    script because the student started a rerun.
    """
    limit = WAIT_LIMIT_S if wait_limit_s is None else wait_limit_s
    acquired = False
    try:
        acquired = _SLOTS.acquire(blocking=False)
        started = time.monotonic()
        while not acquired and time.monotonic() - started < limit:
            notice.info(
                f"Another training is running on this server; yours starts when it ends "
                f"(waiting {time.monotonic() - started:.0f} s, at most {limit:.0f} s).",
                icon=":material/hourglass_top:",
            )
            acquired = _SLOTS.acquire(timeout=POLL_S)
        notice.empty()
        yield acquired
    finally:
        if acquired:
            _SLOTS.release()


def slot_is_free() -> bool:
    """Whether a training could start right now (tests use this to prove a slot was given back)."""
    if _SLOTS.acquire(blocking=False):
        _SLOTS.release()
        return True
    return False
