"""A random BertForMaskedLM saved to a folder, loaded by path as the sidebar's model field would: what the
fill-mask tab and its exercise need, and the embedded MiniLM lacks (it was saved without its head)."""

from __future__ import annotations

import pytest

from anatomy.checkpoints.pretrained import load_pretrained
from tests.tiny_models import save_tiny_bert_for_masked_lm


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return save_tiny_bert_for_masked_lm(tmp_path_factory.mktemp("tiny-bert-for-masked-lm"))


@pytest.fixture(scope="module")
def tiny(tiny_folder):
    return load_pretrained(str(tiny_folder), device="cpu")
