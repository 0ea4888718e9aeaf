"""A count is written with its noun, and the noun takes an s unless the count is one."""

from __future__ import annotations

import pytest

from lessons.common.words import counted


@pytest.mark.parametrize(
    "count, noun, written",
    [
        (1, "stop", "1 stop"),
        (3, "stop", "3 stops"),
        (0, "exercise", "0 exercises"),
        (2, "encoder block", "2 encoder blocks"),
    ],
)
def test_a_count_is_written_with_its_noun_plural_unless_it_is_one(count, noun, written):
    assert counted(count, noun) == written
