"""A tiny backbone (random GPT-2, BPE trained on a few sentences) shared by the CoreLM tests."""

from __future__ import annotations

import pytest

from models.corelm.backbone import TinySettings, load_backbone

TEXTS = [
    "Mary went to the kitchen . She picked up the apple .",
    "John travelled to the garden . Then he dropped the football there .",
    "The cake for Sam 's party is in the garage until the party .",
] * 4


@pytest.fixture(scope="module")
def tiny():
    return load_backbone(
        "tiny", texts=TEXTS, tiny=TinySettings(vocab_size=300, n_embd=32, n_head=2, n_positions=64)
    )
