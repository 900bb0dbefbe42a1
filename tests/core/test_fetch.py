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


class _SlowHandler(http.server.BaseHTTPRequestHandler):
    """A slow mirror that honours Range: 4 KiB every 20 ms (bounded: it gives up after 60 s),
    or, with `stall`, one block then nothing for 60 s. `sent_all` says it finished."""

    body = PAYLOAD
    stall = False
    ranges: list[str | None] = []
    sent_all = threading.Event()

    def do_GET(self):  # noqa: N802
        import time

        rng = self.headers.get("Range")
        type(self).ranges.append(rng)
        start = int(rng.split("=")[1].split("-")[0]) if rng else 0
        chunk = self.body[start:]
        self.send_response(206 if rng else 200)
        self.send_header("Content-Length", str(len(chunk)))
        self.end_headers()
        deadline = time.time() + 60
        try:
            for i in range(0, len(chunk), 4096):
                self.wfile.write(chunk[i : i + 4096])
                self.wfile.flush()
                if self.stall and not rng:
                    while time.time() < deadline:
                        time.sleep(0.05)
                    return
                if rng:  # the resumed request: at full speed
                    continue
                time.sleep(0.02)
                if time.time() > deadline:
                    return
            type(self).sent_all.set()
        except OSError:  # the client went away
            return

    def log_message(self, *args):
        pass


@pytest.fixture
def slow_server():
    _SlowHandler.ranges, _SlowHandler.stall = [], False
    _SlowHandler.sent_all = threading.Event()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowHandler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", _SlowHandler
    httpd.shutdown()


def _fetch_in_thread(src, tmp_path, timeout):
    outcome: dict = {}

    def run():
        try:
            outcome["digest"] = fetch_source(src, "demo", tmp_path / "raw", mirror=None,
                                             mirror_dir="demo", network=True,
                                             cache_dir=tmp_path / "cache", timeout=timeout)  # fmt: skip
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _wait_for_part(part, thread):
    import time

    deadline = time.time() + 60
    while not (part.exists() and part.stat().st_size > 0) and time.time() < deadline:
        assert thread.is_alive()
        time.sleep(0.01)


@pytest.mark.parametrize("stall", [False, True])
def test_stopped_transfers_end_at_once_and_a_rerun_resumes_the_part(tmp_path, slow_server, stall):
    """Issue #59 row 19: Ctrl-C during a download from a slow mirror went on until the
    worker threads had fetched their files; now stop_transfers (the download stage's Ctrl-C)
    ends a slow transfer after one read, a stalled one at once (its socket is shut down), and
    the next run asks only for the rest."""
    from tasks.core import fetch

    base, handler = slow_server
    handler.stall = stall
    src = Source("f.txt", SHA, url=f"{base}/f.txt")
    part = tmp_path / "cache" / "demo" / "f.txt.part"
    fetch.allow_transfers()
    # a read timeout longer than the wait below: a stalled transfer must end by its socket
    thread, outcome = _fetch_in_thread(src, tmp_path, timeout=120)
    _wait_for_part(part, thread)
    fetch.stop_transfers()
    thread.join(30)
    assert not thread.is_alive() and not handler.sent_all.is_set()  # ended before the server
    assert isinstance(outcome.get("error"), fetch.TransferStopped), outcome
    have = part.stat().st_size
    assert 0 < have < len(PAYLOAD) and not (tmp_path / "raw" / "f.txt").exists()
    fetch.allow_transfers()
    assert _fetch(src, tmp_path) == SHA
    assert handler.ranges == [None, f"bytes={have}-"]
    assert (tmp_path / "raw" / "f.txt").read_bytes() == PAYLOAD and not part.exists()


def test_a_local_mirror_copy_resumes_its_part(tmp_path, caplog):
    import logging

    (tmp_path / "m" / "demo").mkdir(parents=True)
    (tmp_path / "m" / "demo" / "f.txt").write_bytes(PAYLOAD)
    part = tmp_path / "cache" / "demo" / "f.txt.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(PAYLOAD[:100_000])  # an interrupted copy's
    with caplog.at_level(logging.INFO, "corefrepro.fetch"):
        assert _fetch(Source("f.txt", SHA), tmp_path, mirror=str(tmp_path / "m")) == SHA
    assert "resuming the copy at 100000 of" in caplog.text
    assert (tmp_path / "raw" / "f.txt").read_bytes() == PAYLOAD and not part.exists()
    part.write_bytes(b"x" * 1000)  # not the file's start: copied whole, not resumed
    (tmp_path / "raw" / "f.txt").unlink()
    assert _fetch(Source("f.txt", SHA), tmp_path, mirror=str(tmp_path / "m")) == SHA
    assert (tmp_path / "raw" / "f.txt").read_bytes() == PAYLOAD
