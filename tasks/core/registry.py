"""One registry class for everything the pipeline builds by name: model families, corpora,
annotators, language models and edge types (issue #54.4).

Why one class: five hand-written dicts each had their own lookup, their own "unknown" wording
and their own way to load a member lazily. A `Registry` is a read-only mapping from a name to
its member. A member is either registered as an object (`register`) or named by the module
that holds it, imported on first use (*lazy*: torch models and tokenizers load slowly, and
reading one family's code must not load the others). An unknown name is one error that names
the setting it came from and the names that exist.

tasks/core/stage_deps.py reads a lazy registry's module table from its source (the dict
literal passed to `Registry(...)`), so that table stays a literal.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from tasks.core.errors import CorefreproError

T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Names -> members. *kind* words the errors ("corpus", "annotator"); *setting* is where a
    name comes from (``params.yaml corpora``); *lazy* maps a name to the module holding its
    member, loaded by `importlib` on first lookup: the module itself, or its *attribute*
    (``FAMILY``); *error* is the exception class an unknown name raises."""

    def __init__(
        self,
        kind: str,
        lazy: Mapping[str, str] | None = None,
        *,
        setting: str = "",
        attribute: str | None = None,
        error: Callable[[str], Exception] = CorefreproError,
    ) -> None:
        self.kind, self.setting, self.attribute, self.error = kind, setting, attribute, error
        self.modules: dict[str, str] = dict(lazy or {})
        self._members: dict[str, T] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._members or name in self.modules

    def __iter__(self) -> Iterator[str]:
        """In the order the names were given (a report's sections follow FAMILIES' order)."""
        return iter({**dict.fromkeys(self.modules), **dict.fromkeys(self._members)})

    def __len__(self) -> int:
        return len(self._members.keys() | self.modules.keys())

    def names(self) -> list[str]:
        """Sorted, as errors and command lines list them."""
        return sorted(self._members.keys() | self.modules.keys())

    def __getitem__(self, name: str) -> T:
        if name in self._members:
            return self._members[name]
        if name not in self.modules:
            raise self.error(self.unknown(name))
        module = importlib.import_module(self.modules[name])
        if self.attribute is None:
            return module  # type: ignore[return-value]  # a module registry: not cached (reloads)
        member = getattr(module, self.attribute)
        self._members[name] = member
        return member

    def get(self, name: str, default: Any = None) -> T | Any:  # type: ignore[override]
        return self[name] if name in self else default  # noqa: SIM401 (this is get)

    def unknown(self, name: object) -> str:
        where = f" ({self.setting})" if self.setting else ""
        return f"unknown {self.kind} {name!r}{where}; known: {', '.join(self.names()) or 'none'}"

    def register(self, name: str, member: T, *, replace: bool = False) -> T:
        """Add *member* as *name*; a name taken by another member is refused unless *replace*."""
        known = self._members.get(name)
        if known is not None and known is not member and not replace:
            raise self.error(f"{self.kind} {name!r} is already registered ({known!r})")
        self._members[name] = member
        return member

    def copy(self) -> Registry[T]:
        """A registry with the same names and members (a test extends it, not the project's)."""
        twin: Registry[T] = Registry(self.kind, self.modules, setting=self.setting,
                                     attribute=self.attribute, error=self.error)  # fmt: skip
        twin._members = dict(self._members)
        return twin
