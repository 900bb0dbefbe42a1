"""Getting corpus files onto disk: local mirror or URL prefix first, then the network.

Every file is declared as a `Source` with its canonical URL and pinned sha256. Downloads, and
copies from a local mirror, are streamed to `<cache>/<corpus>/<file>.part` (resumed, with an
HTTP Range request or from the copied length, when a retry or a rerun finds one), checked, and
only then renamed into place, so an interrupted or failed fetch never leaves a file that looks
complete. `stop_transfers()` (Ctrl-C of the download stage) ends every transfer in progress
within one read, keeping its `.part`. Retrying is the caller's job (the Prefect task wrapper),
one attempt here.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import socket
import tarfile
import threading
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from tasks.core.config import MIRROR_ENV, params, resolve_mirror
from tasks.core.errors import ChecksumError, CorefreproError, MissingSourceError
from tasks.core.settings import WritePath, bounded, parse_settings
from tasks.core.storage import atomic_path, sha256_of

log = logging.getLogger("corefrepro.fetch")


@dataclass
class DownloadSettings:
    """params.yaml download: the shared keys, how every file is fetched (each corpus's own
    namespace, download.<corpus>, is checked by its module: tasks/corpora/ingest.py)."""

    mirror: str = ""  # directory or URL prefix consulted first; COREFREPRO_MIRROR overrides
    network: bool = True  # fall back to the canonical URLs
    fetch_optional: bool = True  # also download optional files (held-back test splits)
    timeout_s: float = bounded(60.0, gt=0)
    workers: int = bounded(4, ge=1)  # concurrent file fetches
    cache_dir: WritePath = "data/cache"  # resumable network downloads (not a DVC output)


def shared_download_settings(section: Mapping[str, Any] | None) -> DownloadSettings:
    """params.yaml download's shared keys for a stage that fetches a file of its own (GloVe):
    the corpus namespaces (mappings) are left to the download stage, which checks them."""
    shared = {k: v for k, v in (section or {}).items() if not isinstance(v, Mapping)}
    return parse_settings(DownloadSettings, shared, "download")


def mirror_setting(path: str | Path | None = None) -> str | None:
    """The mirror to consult before the network: COREFREPRO_MIRROR first, then params.yaml
    download.mirror, parsed strictly; read by config.resolve_mirror."""
    value = os.environ.get(MIRROR_ENV)
    if value is None:
        section = params("download", path) if path is not None else params("download")
        value = shared_download_settings(section).mirror
    return resolve_mirror(value)


CHUNK = 1 << 20
STREAM_CHUNK = 64 << 10  # small reads: bytes received before a dropped connection are kept
PROGRESS_EVERY = 64 << 20  # log a progress line every 64 MiB


@dataclass(frozen=True)
class Archive:
    """A file that upstream only publishes inside a tar/zip archive."""

    url: str
    member: str  # path of the file inside the archive
    sha256: str | None = None  # of the archive itself, when published


@dataclass(frozen=True)
class Source:
    """One file of a corpus as the pipeline needs it.

    relpath: where it lands under data/raw/<corpus>/ and where a mirror keeps it under
        <mirror>/<mirror_dir>/ (unless mirror_relpath says otherwise).
    sha256: pinned hash of the file; None only where upstream publishes none and we have
        not seen the file (the observed hash is then logged and written to SHA256SUMS).
    optional: test files held back from the developer mirror, or files only some users have.
    """

    relpath: str
    sha256: str | None
    url: str | None = None
    archive: Archive | None = None
    optional: bool = False
    mirror_relpath: str | None = None


class TransferStopped(CorefreproError):
    """A transfer ended by stop_transfers (Ctrl-C): its .part stays for the next run."""


_STOP = threading.Event()
_ACTIVE: set[Any] = set()  # the HTTP responses being read (their sockets: stop_transfers)
_ACTIVE_LOCK = threading.Lock()


def stop_transfers() -> None:
    """End every transfer in progress (from any thread) within one read: a slow mirror's as
    well as a stalled one's (its socket is shut down). Each keeps its .part."""
    _STOP.set()
    with _ACTIVE_LOCK:
        responses = list(_ACTIVE)
    for resp in responses:
        sock = getattr(getattr(resp.raw, "connection", None), "sock", None)
        with contextlib.suppress(OSError, AttributeError):
            sock.shutdown(socket.SHUT_RDWR)


def allow_transfers() -> None:
    """Undo stop_transfers (a new download in the same process)."""
    _STOP.clear()


def _check_stop(what: str | Path) -> None:
    if _STOP.is_set():
        raise TransferStopped(f"{what}: stopped; its partial file is resumed on the next run")


def retryable(exc: BaseException) -> bool:
    """Whether a retry of fetch_source may succeed where this attempt failed: only a
    transient network failure. A checksum mismatch or an absent file will not fix itself."""
    if isinstance(exc, ChecksumError):
        return False
    if isinstance(exc, MissingSourceError):
        return exc.transient
    return not isinstance(exc, CorefreproError)  # an unexpected error: retried as before


def _transient(exc: BaseException) -> bool:
    """A network failure worth a retry: timeouts, dropped connections, 429/5xx answers; not a
    name that does not resolve, a refused connection or a 4xx."""
    try:
        import requests
    except ImportError:  # pragma: no cover - requests is a dependency
        return False
    if isinstance(exc, requests.HTTPError):
        code = exc.response.status_code if exc.response is not None else 0
        return code == 429 or code >= 500
    if isinstance(exc, requests.Timeout | requests.exceptions.ChunkedEncodingError):
        return True
    if isinstance(exc, requests.ConnectionError):
        text = str(exc).lower()
        return not any(w in text for w in ("resolve", "refused", "name or service", "no route"))
    return False


def _verify(path: Path, expected: str | None, origin: str) -> str:
    actual = sha256_of(path)
    if expected is not None and actual != expected:
        raise ChecksumError(
            f"{origin}: sha256 {actual} does not match the pinned {expected}; "
            "the file is corrupt or a different version (nothing was written)"
        )
    return actual


def _stream(url: str, part: Path, timeout: float) -> None:
    """Download *url* into *part*, resuming from its current size when the server allows."""
    import requests

    _check_stop(url)
    have = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    with requests.get(url, stream=True, timeout=timeout, headers=headers) as resp:
        if resp.status_code == 416:  # already complete
            return
        resp.raise_for_status()
        mode = "ab" if have and resp.status_code == 206 else "wb"
        if mode == "wb":
            have = 0
        total = resp.headers.get("Content-Length")
        total_n = int(total) + have if total and total.isdigit() else None
        next_log = have + PROGRESS_EVERY
        with _ACTIVE_LOCK:
            _ACTIVE.add(resp)
        try:
            with open(part, mode) as fh:
                # read1: what has arrived (at most STREAM_CHUNK), so a slow mirror's transfer
                # sees stop_transfers after one read, not after a 64 KiB block has trickled in
                while block := resp.raw.read1(STREAM_CHUNK, decode_content=True):
                    fh.write(block)
                    have += len(block)
                    _check_stop(url)
                    if have >= next_log:
                        pct = f" ({100 * have / total_n:.0f}%)" if total_n else ""
                        log.info("%s: %d MiB%s", url, have >> 20, pct)
                        next_log += PROGRESS_EVERY
        except Exception as exc:
            _check_stop(url)  # a socket shut down by stop_transfers: stopped, not failed
            import urllib3

            # read1 raises urllib3's errors; _transient knows requests' (iter_content's)
            if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
                raise requests.exceptions.ReadTimeout(f"{url}: {exc}") from exc
            if isinstance(exc, urllib3.exceptions.ProtocolError | urllib3.exceptions.DecodeError):
                raise requests.exceptions.ChunkedEncodingError(f"{url}: {exc}") from exc
            raise
        finally:
            with _ACTIVE_LOCK:
                _ACTIVE.discard(resp)
        if total_n is not None and have < total_n:
            _check_stop(url)
            raise requests.exceptions.ChunkedEncodingError(
                f"{url}: connection closed after {have} of {total_n} bytes"
            )


def _copy_resumable(src: Path, part: Path) -> None:
    """Copy *src* into *part*, continuing a partial copy when its bytes are still src's start
    (its last block is compared), from the beginning otherwise."""
    size = src.stat().st_size
    have = part.stat().st_size if part.exists() else 0
    if have:
        tail = min(have, CHUNK)
        with open(src, "rb") as a, open(part, "rb") as b:
            a.seek(have - tail)
            b.seek(have - tail)
            same = have <= size and a.read(tail) == b.read(tail)
        if same:
            log.info("%s: resuming the copy at %d of %d bytes", src, have, size)
        else:
            have = 0
    part.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as fin, open(part, "ab" if have else "wb") as fout:
        fin.seek(have)
        while block := fin.read(CHUNK):
            fout.write(block)
            _check_stop(src)


def _fetch_url(
    url: str, target: Path, expected: str | None, timeout: float, part: Path | None = None
) -> str:
    """Fetch one URL (http(s) or file://) onto *target*, verified, atomically. A file:// copy
    goes through *part* (resumable: a local mirror's copy in the cache) when one is given."""
    parsed = urlparse(url)
    if parsed.scheme == "file":
        src = Path(unquote(parsed.path))
        if not src.exists():
            raise FileNotFoundError(src)
        if part is None:
            with atomic_path(target) as tmp:
                shutil.copyfile(src, tmp)
                return _verify(tmp, expected, str(src))
        _copy_resumable(src, part)
    else:
        part = target.with_name(target.name + ".part")
        target.parent.mkdir(parents=True, exist_ok=True)
        _stream(url, part, timeout)
    try:
        digest = _verify(part, expected, url)
    except ChecksumError:
        part.unlink(missing_ok=True)  # a resumed file that fails the check is not resumable
        raise
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(part, target)  # a rename; a copy where the cache is on another filesystem
    return digest


def _via_cache(url: str, cached: Path, target: Path, expected: str | None, timeout: float) -> str:
    """Download into the cache (resumable), then place a copy at *target* atomically."""
    if not (cached.exists() and (expected is None or sha256_of(cached) == expected)):
        _fetch_url(url, cached, expected, timeout)
    return _fetch_url(cached.resolve().as_uri(), target, expected, timeout)


def _extract_member(archive_path: Path, member: str, target: Path, expected: str | None) -> str:
    name = archive_path.name
    with atomic_path(target) as tmp:
        if zipfile.is_zipfile(archive_path):
            with (
                zipfile.ZipFile(archive_path) as zf,
                zf.open(member) as src,
                open(tmp, "wb") as dst,
            ):
                shutil.copyfileobj(src, dst, CHUNK)
        else:
            with tarfile.open(archive_path) as tf:
                # some tarballs store members as "./name"
                try:
                    info = tf.getmember(member)
                except KeyError:
                    info = tf.getmember(f"./{member}")
                src = tf.extractfile(info)
                if src is None:
                    raise MissingSourceError(
                        f"{name}: '{member}' is not a regular file in the archive"
                    )
                with src, open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst, CHUNK)
        return _verify(tmp, expected, f"{name}!{member}")


def _logs_unpinned(fetch):
    """A file with no pinned sha256 (upstream publishes none and the mirror lacks it) is
    accepted with its hash logged, so a later run can tell whether it got the same bytes."""

    @functools.wraps(fetch)
    def logged(source: Source, corpus: str, *args, **kwargs) -> str | None:
        digest = fetch(source, corpus, *args, **kwargs)
        if digest is not None and source.sha256 is None:
            log.info("%s: %s has no pinned sha256; accepted sha256 %s", corpus, source.relpath,
                     digest)  # fmt: skip
        return digest

    return logged


@_logs_unpinned
def fetch_source(
    source: Source,
    corpus: str,
    dest_dir: Path,
    *,
    mirror: str | None,
    mirror_dir: str,
    network: bool,
    cache_dir: Path,
    timeout: float = 60.0,
) -> str | None:
    """Make dest_dir/source.relpath exist with the right content; return its sha256.

    Returns None for an optional source that no origin has. Raises MissingSourceError for a
    required one, naming the file and the setting to change. An unpinned file's hash is
    logged (`_logs_unpinned`; SHA256SUMS beside the raw files too).
    """
    target = dest_dir / source.relpath
    if target.exists() and source.sha256 is not None and sha256_of(target) == source.sha256:
        return source.sha256

    tried: list[str] = []
    transient = False
    # Network (and URL-mirror) downloads land in the cache first: a rerun or a retry resumes
    # there instead of starting over, and DVC may wipe data/raw without losing them.
    cached = cache_dir / corpus / source.relpath
    if mirror:
        rel = source.mirror_relpath or source.relpath
        if "://" in mirror:
            url = f"{mirror}/{mirror_dir}/{rel}"
            try:
                return _via_cache(url, cached, target, source.sha256, timeout)
            except (ChecksumError, TransferStopped):
                raise
            except Exception as exc:  # noqa: BLE001 - any transport failure falls through
                tried.append(f"mirror {url} ({type(exc).__name__})")
                transient = transient or _transient(exc)
        else:
            path = Path(mirror) / mirror_dir / rel
            if path.exists():
                part = cached.with_name(cached.name + ".part")
                return _fetch_url(path.resolve().as_uri(), target, source.sha256, timeout, part)
            tried.append(f"mirror {path} (absent)")

    if source.url and source.url.startswith("file://"):
        # a user-supplied local copy (e.g. LDC's OntoNotes): no network involved
        try:
            part = cached.with_name(cached.name + ".part")
            return _fetch_url(source.url, target, source.sha256, timeout, part)
        except FileNotFoundError as exc:
            tried.append(f"{source.url} (absent: {exc})")
    elif network and source.url:
        try:
            return _via_cache(source.url, cached, target, source.sha256, timeout)
        except (ChecksumError, TransferStopped):
            raise
        except Exception as exc:  # noqa: BLE001
            tried.append(f"{source.url} ({type(exc).__name__}: {exc})"[:300])
            transient = transient or _transient(exc)
    elif network and source.archive:
        arc = source.archive
        arc_path = cache_dir / "_archives" / Path(urlparse(arc.url).path).name
        try:
            if not (
                arc_path.exists() and (arc.sha256 is None or sha256_of(arc_path) == arc.sha256)
            ):
                _fetch_url(arc.url, arc_path, arc.sha256, timeout)
            return _extract_member(arc_path, arc.member, target, source.sha256)
        except (ChecksumError, TransferStopped):
            raise
        except Exception as exc:  # noqa: BLE001
            tried.append(f"{arc.url} ({type(exc).__name__}: {exc})"[:300])
            transient = transient or _transient(exc)
    elif not network:
        tried.append(
            "network disabled (download.network, or download.fetch_optional for optional files)"
        )

    if source.optional:
        log.info(
            "%s: optional file %s not available (%s); skipped",
            corpus,
            source.relpath,
            "; ".join(tried),
        )
        return None
    raise MissingSourceError(
        f"{corpus}: missing {source.relpath} — tried {'; '.join(tried) or 'nothing (no URL known)'}. "
        f"Set download.mirror in params.yaml or COREFREPRO_MIRROR to a directory holding "
        f"{mirror_dir}/{source.mirror_relpath or source.relpath} (e.g. ../shared/data), or enable the network.",
        transient=transient,
    )
