"""Stage flows in-process: settings, failure modes, scheduling."""

from __future__ import annotations

import pytest

import flows.download as download_flow
from tasks.core import layout
from tasks.core.errors import MissingSourceError
from tasks.corpora import ingest


def test_download_without_network_or_mirror_writes_nothing(tmp_path, monkeypatch):
    settings = {"network": False, "mirror": "", "cache_dir": str(tmp_path / "cache"), "babi": {}}
    monkeypatch.setattr(ingest, "params", lambda section=None: settings)
    monkeypatch.setattr(download_flow, "mirror_setting", lambda: None)
    monkeypatch.setattr(layout, "raw_dir", lambda corpus: tmp_path / "raw" / corpus)
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    monkeypatch.setattr(download_flow.fetch_file, "retries", 0)
    with pytest.raises(MissingSourceError) as err:
        download_flow.download("babi")
    message = str(err.value)
    assert (
        "babi: missing" in message
        and "download.mirror" in message
        and "network disabled" in message
    )
    assert not (tmp_path / "raw").exists() or list((tmp_path / "raw").iterdir()) == []


def test_reproduce_can_be_deployed_on_a_cron_schedule():
    from flows.reproduce import reproduce

    deployment = reproduce.prefect_flow.to_deployment(name="nightly", cron="0 3 * * *")
    assert deployment.name == "nightly"
    assert [s.schedule.cron for s in deployment.schedules] == ["0 3 * * *"]


def test_process_runner_maps_in_order_with_progress(tmp_path, monkeypatch):
    """Local mode with Runner("processes", 2): spawned workers, results in input order."""
    import hashlib

    from flows.runtime import Runner, flow, task
    from tasks.core.fetch import sha256_of

    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    paths = []
    for i in range(4):
        paths.append(tmp_path / f"f{i}")
        paths[-1].write_bytes(bytes([i]) * (i + 1))
    hashed = task(sha256_of, name="hash")
    seen: list[int] = []

    @flow(name="hash-all", runner=Runner("processes", 2))
    def hash_all():
        return hashed.map_kwargs([{"path": p} for p in paths], on_done=lambda i, _: seen.append(i))

    assert hash_all() == [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]
    assert sorted(seen) == [0, 1, 2, 3]


def test_runner_rejects_unknown_kind():
    from flows.runtime import Runner

    with pytest.raises(ValueError, match="threads, processes or dask"):
        Runner("gpu", 2)
