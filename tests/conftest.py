"""Shared fixtures: the embedded all-MiniLM-L6-v2 twice, once as an anatomy model and once as the
Hugging Face reference it must agree with. Both are loaded once per test session (about a second). And one
PostgreSQL server for the session's class-database tests (tests/classroom)."""

from __future__ import annotations

import pytest
import torch

from anatomy.checkpoints.pretrained import load_pretrained
from harness.postgres import PostgresServer, postgres_binaries
from tests.postgresql import MISSING


def pytest_collection_modifyitems(items):
    """Tests that run for minutes (marked long) first: `make test` runs on two workers, and a long test handed
    out last would run alone at the end while the other worker sat idle. The sort is stable, so everything
    else keeps its order (and its module's fixtures)."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(scope="session")
def embedded():
    """The embedded checkpoint (no reference given) as an anatomy `PretrainedModel`, pinned to the CPU
    beside the Hugging Face reference, whatever accelerator the machine has."""
    return load_pretrained(device="cpu")


@pytest.fixture(scope="session")
def served(embedded):
    """The embedded checkpoint on the device the app itself runs it on (CUDA or MPS where present, else the
    CPU, where this is `embedded`). Page tests that hold a page to the exact numbers the model computes take
    their expected values from this one: two devices round float32 differently (about 1e-6 apart)."""
    from lessons.common.ui.loaders import usable_device

    device = usable_device()
    return embedded if device == "cpu" else load_pretrained(device=device)


@pytest.fixture(scope="session")
def hf_tokenizer(embedded):
    """transformers' tokenizer of the same folder, for batches padded as transformers pads them (the app's own
    tokenizer reads one text at a time: tests/anatomy/test_tokenizer_parity.py proves the two agree)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(embedded.folder))


@pytest.fixture(scope="session")
def hf_bert(embedded):
    """The same checkpoint folder read by transformers' `BertModel` with the eager (explicit softmax)
    attention, so that it can return attention weights to compare against."""
    from transformers import BertModel

    model = BertModel.from_pretrained(str(embedded.folder), attn_implementation="eager").eval()
    return model.requires_grad_(False)


@pytest.fixture
def cpu_token_cap(monkeypatch):
    """The decoder lessons' cap on a CPU, 512 tokens, whatever device runs the tests: on a CUDA GPU they read all of
    SmolLM2's 8,192 positions (the rule itself: tests/lessons/common/test_decoder_attention.py)."""
    from lessons.common import decoder_attention

    on_a_cpu = decoder_attention.token_limit_on
    monkeypatch.setattr(
        decoder_attention, "token_limit_on", lambda device, positions: on_a_cpu(torch.device("cpu"), positions)
    )


@pytest.fixture
def one_thread():
    """Torch on one CPU thread for the duration of a test. The models trained here are so small that a second
    thread gains little, and on a busy machine every op can stall while it waits for a descheduled partner
    thread (seen: a 20-step training run taking 40 s instead of 0.4 s)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def no_autograd():
    """Model-core comparisons are inference and need no gradients; core test files opt in with
    `pytestmark = pytest.mark.usefixtures("no_autograd")` (not autouse, so other suites keep autograd)."""
    with torch.no_grad():
        yield


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory):
    """One PostgreSQL server for the whole session (started in about a second), with crash safety off: a test
    gets a database of its own on it (tests/classroom/conftest.py). Fails, never skips, where PostgreSQL is
    missing: only tests collected for it ask for it (tests/postgresql.py)."""
    binaries = postgres_binaries()
    if binaries is None:
        pytest.fail(MISSING, pytrace=False)
    with PostgresServer(tmp_path_factory.mktemp("postgres"), binaries, durable=False) as server:
        yield server
