"""Fetching: mirror, checksum, resumable download over a local HTTP server, archives."""

from __future__ import annotations

import hashlib
import http.server
import io
import tarfile
import threading

import pytest

from tasks.core.errors import ChecksumError, MissingSourceError
from tasks.core.fetch import Archive, Source, fetch_source

PAYLOAD = b"line one\nline two\n" * 20000
SHA = hashlib.sha256(PAYLOAD).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}
    ranges: list[str | None] = []
    fail_after: int | None = None  # truncate the body after this many bytes (simulated drop)

    def do_GET(self):  # noqa: N802
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        rng = self.headers.get("Range")
        type(self).ranges.append(rng)
        start = int(rng.split("=")[1].split("-")[0]) if rng else 0
        chunk = body[start:]
        self.send_response(206 if rng else 200)
        self.send_header("Content-Length", str(len(chunk)))
        self.end_headers()
        if self.fail_after is not None:
            self.wfile.write(chunk[: self.fail_after])
            type(self).fail_after = None
            self.close_connection = True
            return
        self.wfile.write(chunk)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Handler.files = {}
    _Handler.ranges = []
    _Handler.fail_after = None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", _Handler
    httpd.shutdown()


def _fetch(src, tmp_path, **kw):
    args = {"mirror": None, "mirror_dir": "demo", "network": True, "cache_dir": tmp_path / "cache"}
    args.update(kw)
    return fetch_source(src, "demo", tmp_path / "raw", timeout=5, **args)


def test_mirror_directory_is_consulted_first(tmp_path):
    (tmp_path / "m" / "demo" / "sub").mkdir(parents=True)
    (tmp_path / "m" / "demo" / "sub" / "f.txt").write_bytes(PAYLOAD)
    src = Source("sub/f.txt", SHA, url="http://127.0.0.1:9/never-used")
    assert _fetch(src, tmp_path, mirror=str(tmp_path / "m")) == SHA
    assert (tmp_path / "raw" / "sub" / "f.txt").read_bytes() == PAYLOAD


def test_wrong_checksum_writes_nothing(tmp_path):
    (tmp_path / "m" / "demo").mkdir(parents=True)
    (tmp_path / "m" / "demo" / "f.txt").write_bytes(PAYLOAD + b"x")
    with pytest.raises(ChecksumError, match="does not match the pinned"):
        _fetch(Source("f.txt", SHA), tmp_path, mirror=str(tmp_path / "m"))
    assert not (tmp_path / "raw").exists() or not any((tmp_path / "raw").rglob("*.txt"))


def test_missing_file_names_file_and_setting(tmp_path):
    with pytest.raises(MissingSourceError) as err:
        _fetch(Source("en/qa1.txt", SHA, url="http://x/qa1.txt"), tmp_path, network=False)
    msg = str(err.value)
    assert "en/qa1.txt" in msg and "download.mirror" in msg and "COREFREPRO_MIRROR" in msg
    assert not (tmp_path / "raw").exists()


def test_optional_missing_file_is_skipped(tmp_path):
    assert _fetch(Source("t.txt", None, optional=True), tmp_path, network=False) is None


def test_download_resumes_after_a_dropped_connection(tmp_path, server):
    base, handler = server
    handler.files["/f.txt"] = PAYLOAD
    handler.fail_after = 200_000
    src = Source("f.txt", SHA, url=f"{base}/f.txt")
    with pytest.raises(MissingSourceError):  # first attempt: connection dropped mid-body
        _fetch(src, tmp_path)
    part = tmp_path / "cache" / "demo" / "f.txt.part"
    have = part.stat().st_size
    assert 0 < have < len(PAYLOAD)
    assert not (tmp_path / "raw" / "f.txt").exists()
    assert _fetch(src, tmp_path) == SHA  # the retry asks only for the rest
    assert handler.ranges == [None, f"bytes={have}-"]
    assert (tmp_path / "raw" / "f.txt").read_bytes() == PAYLOAD


def test_url_mirror_prefix(tmp_path, server):
    base, handler = server
    handler.files["/mirror/demo/f.txt"] = PAYLOAD
    assert _fetch(Source("f.txt", SHA), tmp_path, mirror=f"{base}/mirror", network=False) == SHA


def test_archive_member_is_extracted_and_checked(tmp_path, server):
    base, handler = server
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("pkg/data/f.txt")
        info.size = len(PAYLOAD)
        tf.addfile(info, io.BytesIO(PAYLOAD))
    handler.files["/pkg.tar.gz"] = buf.getvalue()
    arc_sha = hashlib.sha256(buf.getvalue()).hexdigest()
    src = Source("f.txt", SHA, archive=Archive(f"{base}/pkg.tar.gz", "pkg/data/f.txt", arc_sha))
    assert _fetch(src, tmp_path) == SHA
    assert (tmp_path / "raw" / "f.txt").read_bytes() == PAYLOAD
    bad = Source("g.txt", SHA, archive=Archive(f"{base}/pkg.tar.gz", "pkg/data/f.txt", "0" * 64))
    (tmp_path / "cache" / "_archives" / "pkg.tar.gz").unlink()
    with pytest.raises(ChecksumError):
        _fetch(bad, tmp_path)


def test_an_unpinned_file_is_accepted_with_its_hash_logged(tmp_path, caplog):
    """Issue #14.4: files with no published checksum (and none in the mirror to pin from)
    were accepted unchecked and unrecorded; the hash of what was accepted is now logged."""
    import logging

    (tmp_path / "m" / "demo").mkdir(parents=True)
    (tmp_path / "m" / "demo" / "f.txt").write_bytes(PAYLOAD)
    with caplog.at_level(logging.INFO, "corefrepro.fetch"):
        assert _fetch(Source("f.txt", None, optional=True), tmp_path, mirror=str(tmp_path / "m"))
    assert f"demo: f.txt has no pinned sha256; accepted sha256 {SHA}" in caplog.text


def test_the_mirror_setting_is_read_once_through_the_parsed_download_settings(
    tmp_path, monkeypatch
):
    """Issue #54.4: one mirror resolver (tasks/core/config.py), the parsed field its source."""
    from tasks.core import config
    from tasks.core.fetch import mirror_setting
    from tasks.core.settings import ConfigError

    monkeypatch.delenv(config.MIRROR_ENV, raising=False)
    params = tmp_path / "params.yaml"
    params.write_text("download:\n  mirror: data/m\n  synthetic: {}\n")
    assert mirror_setting(params) == str(config.REPO_ROOT / "data/m")
    typo = tmp_path / "typo.yaml"
    typo.write_text("download:\n  mirror: data/m\n  mirorr: typo\n")  # strict: named
    with pytest.raises(ConfigError, match="download.mirorr"):
        mirror_setting(typo)
    monkeypatch.setenv(config.MIRROR_ENV, "https://host/m/")
    assert mirror_setting(params) == "https://host/m"
    assert config.resolve_mirror("") is None
