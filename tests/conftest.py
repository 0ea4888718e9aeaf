"""Shared fixtures: the embedded all-MiniLM-L6-v2 twice, once as an anatomy model and once as the
Hugging Face reference it must agree with. Both are loaded once per test session (about a second)."""

from __future__ import annotations

import pytest
import torch

import anatomy


@pytest.fixture(scope="session")
def embedded():
    """The embedded checkpoint as an anatomy `PretrainedModel` (Encoder + tokenizer, eval mode, CPU)."""
    return anatomy.load_pretrained(device="cpu")


@pytest.fixture(scope="session")
def hf_bert(embedded):
    """The same checkpoint folder read by transformers' `BertModel` with the eager (explicit softmax)
    attention, so that it can return attention weights to compare against."""
    from transformers import BertModel

    model = BertModel.from_pretrained(str(embedded.folder), attn_implementation="eager").eval()
    return model.requires_grad_(False)


@pytest.fixture(autouse=True)
def _no_autograd():
    """Every comparison is inference: no test here needs gradients."""
    with torch.no_grad():
        yield
