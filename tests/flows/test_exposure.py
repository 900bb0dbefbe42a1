"""Servers the project starts listen on the loopback interface unless the user says
otherwise (issue #14.6): the Dask scheduler's HTTP server (its dashboard, /health and
/metrics) listened on 0.0.0.0:8787 by default, bokeh installed or not."""

from __future__ import annotations

import pytest

from flows.runtime import Runner

pytest.importorskip("distributed")


def _listening(cluster_kwargs: dict) -> tuple[str, list[str]]:
    from distributed import LocalCluster

    with LocalCluster(**{**cluster_kwargs, "n_workers": 0}) as cluster:
        http = cluster.scheduler.http_server
        return cluster.scheduler.address, [s.getsockname()[0] for s in http._sockets.values()]


def test_the_dask_scheduler_and_dashboard_bind_loopback(monkeypatch):
    monkeypatch.delenv("COREFREPRO_BIND_HOST", raising=False)
    kwargs = Runner("dask", 2).dask_cluster_kwargs()
    assert kwargs["dashboard_address"].startswith("127.0.0.1:")
    scheduler, http = _listening(kwargs)
    assert scheduler.startswith("tcp://127.0.0.1:")
    assert http and set(http) == {"127.0.0.1"}


def test_exposing_them_is_an_explicit_choice(monkeypatch):
    monkeypatch.setenv("COREFREPRO_BIND_HOST", "0.0.0.0")
    assert Runner("dask", 2).dask_cluster_kwargs()["dashboard_address"] == "0.0.0.0:0"
