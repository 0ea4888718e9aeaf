"""SmolLM2 for the language-model tests: the very model the page serves, loaded once for the whole run (the page
and these tests share the loader's cache, so AppTest runs in this process reuse it)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def chat():
    from lessons.common.ui import loaders

    return loaders.get_chat_model()
