"""Fixtures of the training-loop tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def mage_graphs(tmp_path_factory):
    """graphs@synthetic-gold from the project's generator, built once per module."""
    from tests.models.mage.test_data import build_synthetic_graphs

    return build_synthetic_graphs(tmp_path_factory.mktemp("synthetic-gold"))
