"""Corpora for the annotator tests, made the way the pipeline makes them (module fixtures)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS
from tasks.core.storage import to_table
from tasks.corpora import handmade, synthetic

SMALL_SYNTHETIC = {"n_train": 12, "n_dev": 12, "n_test": 6}


def tables(normalized) -> dict[str, pa.Table]:
    return {
        DOCUMENTS: to_table(DOCUMENTS, normalized.documents),
        ITEMS: to_table(ITEMS, normalized.items),
        MENTIONS: to_table(MENTIONS, normalized.mentions),
    }


@pytest.fixture(scope="session")
def synthetic_tables(tmp_path_factory) -> dict[str, pa.Table]:
    raw = tmp_path_factory.mktemp("synthetic-raw")
    synthetic.generate(raw, SMALL_SYNTHETIC)
    return tables(synthetic.normalize(raw, {}))


@pytest.fixture(scope="session")
def handmade_tables(tmp_path_factory) -> dict[str, pa.Table]:
    raw = tmp_path_factory.mktemp("handmade-raw")
    handmade.generate(raw, {})
    return tables(handmade.normalize(raw, {}))
