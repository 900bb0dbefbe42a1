"""Fixtures the MAGE tests share (one torch thread comes from tests/models/conftest.py)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def local_flows(monkeypatch):
    """Stage flows run as plain Python (no Prefect server)."""
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")


@pytest.fixture
def float64():
    """Exactness checks run in float64."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)
