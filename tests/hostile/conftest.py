"""The hostile tests' guard: every byte of a command's inputs and of OUT/'s neighbours, checked at the end."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.hostile_helpers import neighbours_digest, tree_digest


@pytest.fixture
def guard():
    """``guard(out, *inputs)``: every byte of ``inputs`` and beside ``out``, checked at the end."""
    watched = []

    def watch(out, *inputs):
        Path(out).parent.mkdir(parents=True, exist_ok=True)  # (OUT/ itself is the command's to make)
        watched.append((out, inputs, neighbours_digest(out), tree_digest(*inputs)))

    yield watch
    for out, inputs, beside, before in watched:
        assert neighbours_digest(out) == beside, "a file beside OUT/ changed"
        assert tree_digest(*inputs) == before, "an input changed"
