"""Errors that point the user at the exact place to fix."""

from __future__ import annotations

from pathlib import Path


class CorefreproError(Exception):
    """Base class: every error the pipeline raises on purpose."""


def first_line(exc: BaseException, limit: int = 200) -> str:
    """A library error's first line (its type when empty): what a one-line message quotes."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:limit]


class DataError(CorefreproError):
    """Malformed input: names the file and (when known) the 1-based line."""

    def __init__(self, path: str | Path, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class MissingSourceError(CorefreproError):
    """A corpus file is neither on disk, in the mirror, nor downloadable.

    transient: a network attempt failed in a way a retry may fix (a timeout, a dropped
    connection, a 5xx); an absent file or a 404 is not retried."""

    def __init__(self, message: str, *, transient: bool = False):
        super().__init__(message)
        self.transient = transient


class ChecksumError(CorefreproError):
    """A file's sha256 differs from the pinned value."""
