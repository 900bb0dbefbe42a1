"""Strict stage settings: each params.yaml section parsed into a typed dataclass.

Why: a typo in params.yaml (`epocs: 10`) silently kept the default, and a wrong type
(`epochs: ten`) failed minutes into a run, far from the line to fix. Parsing a stage's section
into its settings dataclass first turns both into one ConfigError, raised before any work
starts, that lists every problem of the section (one line each) with its full key path and,
for a typo, the closest valid key:

    train_mage.train.epocs: unknown setting (did you mean epochs?)
    train_mage.train.epochs: expected int, got str 'ten'

A stage declares its settings (nanoGPT-style) and loads them once:

    @dataclass(frozen=True)
    class TrainSettings:
        epochs: int = 3
        lr: float = 0.001

    @dataclass(frozen=True)
    class TrainMageSettings:
        data: str
        train: TrainSettings = field(default_factory=TrainSettings)
        task_settings: dict[str, dict[str, Any]] = field(default_factory=dict)

    cfg = load_stage_settings(TrainMageSettings, "train_mage")
    qa3 = override_settings(cfg.train, cfg.task_settings.get("qa3"), "train_mage.task_settings.qa3")

Field types: bool, int, float (an int is accepted; a bool is a number nowhere), str, Name (a
str that becomes a directory name: a run, corpus or derived-corpus name; checked against
tasks.core.layout.SAFE_NAME, so "../x" or "/tmp" is refused where params are parsed), WritePath
(a folder a stage writes under, relative to the checkout: it must lie inside the data roots,
tasks.core.layout.check_write_target, so `cache_dir: /tmp/x` is refused before any work), X | None,
Literal[...], list[T], tuple[T, ...] (or a fixed tuple[A, B]), dict[K, T], nested settings
dataclasses, and Any (passed through, copied). A section (dataclass) given as null or left out
takes all its defaults; a dict field given as null is empty. Defaults are not re-checked.

Ranges: a numeric setting declares its bounds where it is declared, and the parser checks a
value from params.yaml against them before any work (a default is trusted):

    lr: float = bounded(0.001, gt=0)
    dropout: float = bounded(0.1, ge=0, lt=1)
    seeds: list[int] = bounded([1], min_items=1)   # a list default is copied per instance
    patience: int | None = bounded(5, ge=1)         # None passes: "no bound" is the setting's own

    train_mage.train.lr: must be > 0, got -0.001

Value checks: a settings class may define `validate(self, path: str) -> None`. The parser calls
it once the instance is built from cleanly parsed fields, with the instance's key path, and the
method raises ConfigError naming the key, e.g.

    def validate(self, path: str) -> None:
        if not 0 < self.dev_fraction < 1:
            raise ConfigError(f"{key_path(path, 'dev_fraction')}: must be in (0, 1), got ...")

A ConfigError (one or several lines) from `validate` or `__post_init__` joins the section's
problems as is; a ValueError from either is reported at the section's path.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from tasks.core import config
from tasks.core.config import PARAMS_FILE
from tasks.core.errors import CorefreproError
from tasks.core.layout import DATA_ROOTS, WRITE_ROOTS_ENV, check_write_target, name_problem

T = TypeVar("T")
# A problem before formatting: (key path, what is wrong); an empty path means the message
# already carries its own (a ConfigError raised by a settings class).
Problem = tuple[str, str]
_FAIL: Any = object()  # a value that failed to parse (its problems are already recorded)
_NONE = type(None)
_SCALARS = (bool, int, float, str)
_REPR_MAX = 60


@dataclasses.dataclass(frozen=True)
class Bounds:
    """What `bounded` declares: a number's bounds (ge/gt/le/lt), a sequence's least length."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    min_items: int | None = None

    def problem(self, value: Any) -> str | None:
        """Why `value` breaks these bounds, or None (None itself and non-numbers pass)."""
        sized = isinstance(value, list | tuple | dict)
        if self.min_items is not None and sized and len(value) < self.min_items:
            return f"needs at least {self.min_items} item(s), got {len(value)}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        for op, bound, ok in (
            (">=", self.ge, lambda v, b: v >= b),
            (">", self.gt, lambda v, b: v > b),
            ("<=", self.le, lambda v, b: v <= b),
            ("<", self.lt, lambda v, b: v < b),
        ):
            if bound is not None and not ok(value, bound):
                return f"must be {op} {bound:g}, got {value!r}"
        return None


def bounded(default: Any = dataclasses.MISSING, **bounds: Any) -> Any:
    """A dataclass field with `default` and bounds (Bounds' keywords) the parser checks."""
    meta = {"bounds": Bounds(**bounds)}
    if isinstance(default, list | dict):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


# a `threads` setting (torch intra-op threads): a number, auto (this process's share of the
# cores, native mode only: tasks/core/numerics.py `threads`) or None (torch's own default)
Threads = int | Literal["auto"] | None


class Name(str):
    """Settings type of a name that becomes a path component (run, corpus, derived corpus):
    parsed as a plain str that must match tasks.core.layout.SAFE_NAME."""


class WritePath(str):
    """Settings type of a folder a stage writes under (a cache): parsed as a plain str that,
    relative to the checkout, lies inside the data roots (tasks.core.layout.write_roots)."""


class ConfigError(CorefreproError):
    """One or more settings problems, one line each: `<key path>: <what is wrong>`."""

    def __init__(self, problems: str | Iterable[str]):
        lines = problems.splitlines() if isinstance(problems, str) else list(problems)
        # once each: a section every entry inherits (train_mage.train) is checked per entry
        self.problems: tuple[str, ...] = tuple(dict.fromkeys(lines))
        super().__init__("\n".join(self.problems))


def key_path(path: str, key: object) -> str:
    """`path.key` (just `key` at the top level): the name a problem is reported under."""
    return f"{path}.{key}" if path else str(key)


def parse_settings(cls: type[T], data: Mapping[str, Any] | None, path: str) -> T:
    """Build settings dataclass `cls` from `data` (one params.yaml section, or part of one).

    `path` is the section's key path (e.g. "train_mage"), the prefix of every problem. Raises
    ConfigError listing every unknown key, wrong type, missing required key and failed value
    check of the section at once.
    """
    if not _is_settings_class(cls):
        raise TypeError(f"parse_settings: {cls!r} is not a dataclass")
    problems: list[Problem] = []
    settings = _parse_section(cls, data, path, problems)
    if problems:
        raise ConfigError(f"{p}: {m}" if p else m for p, m in problems)
    return settings


def load_stage_settings(cls: type[T], section: str, params_file: str | Path = PARAMS_FILE) -> T:
    """A stage's settings: params.yaml section `section` parsed into `cls` (strictly); the
    file read per call (config.params: tests give their own)."""
    return parse_settings(cls, config.params(section, params_file), section)


# (cls, section, params file) -> (the section parsed, a copy of it, the settings)
_PARSED: dict[tuple[type, str, str], tuple[Any, Any, Any]] = {}


def stage_settings(cls: type[T], section: str, params_file: str | Path = PARAMS_FILE) -> T:
    """load_stage_settings, parsed once per process: a later call (the CLI's train.nproc, then
    the flow) returns the same settings while the section is the one parsed, unchanged; other
    params (a test's, an edited file) are parsed anew. Callers must not mutate the result
    (dataclasses.replace gives a seed its own)."""
    raw = config.params(section, params_file)
    key = (cls, section, str(Path(params_file).resolve()))
    hit = _PARSED.get(key)
    if hit is not None and hit[0] is raw and hit[1] == raw:
        return hit[2]
    parsed = parse_settings(cls, raw, section)
    _PARSED[key] = (raw, copy.deepcopy(raw), parsed)
    return parsed


def settings_to_dict(settings: Any) -> dict[str, Any]:
    """A settings instance as plain nested dicts and lists (for MLflow params, fingerprints,
    checkpoints, YAML/JSON); `parse_settings(type(s), settings_to_dict(s), path)` gives it back.
    """
    if not dataclasses.is_dataclass(settings) or isinstance(settings, type):
        raise TypeError(f"settings_to_dict: {settings!r} is not a dataclass instance")
    return _plain(settings)


def override_settings(settings: T, overrides: Mapping[str, Any] | None, path: str) -> T:
    """`settings` with `overrides` applied, as strictly as parse_settings.

    Mappings merge key by key (a nested section keeps the settings the override leaves out);
    any other value, lists included, replaces. `path` names where the overrides come from
    (e.g. "train_mage.task_settings.qa3"), the prefix of every problem.
    """
    if overrides is None:
        return settings
    if not isinstance(overrides, Mapping):
        raise ConfigError(f"{path}: expected mapping, got {_show(overrides)}")
    merged = _merge(settings_to_dict(settings), overrides)
    return parse_settings(type(settings), merged, path)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return {f.name: _plain(getattr(value, f.name)) for f in fields if f.init}
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overrides.items():
        value = _plain(value)
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _is_settings_class(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


@functools.cache
def _fields(cls: type) -> dict[str, tuple[Any, bool]]:
    """Settable fields of `cls`: name -> (type, required). Checked once per class."""
    hints = get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        _check_supported(hints[f.name], f"{cls.__qualname__}.{f.name}")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out[f.name] = (hints[f.name], required)
    return out


def _check_supported(tp: Any, where: str) -> None:
    origin = get_origin(tp)
    if (
        tp is Any
        or tp is _NONE
        or tp in _SCALARS
        or tp in (Name, WritePath)
        or _is_settings_class(tp)
    ):
        return
    if origin is Literal:
        return
    if tp in (list, tuple, dict) or origin in (list, tuple, dict, Union, types.UnionType):
        for arg in get_args(tp):
            if arg is not Ellipsis:
                _check_supported(arg, where)
        return
    raise TypeError(f"{where}: unsupported settings type {tp!r}")


def _parse(tp: Any, value: Any, path: str, problems: list[Problem]) -> Any:
    """`value` as type `tp`, or _FAIL with the reasons appended to `problems`."""
    if tp is Any:
        return copy.deepcopy(value)
    if _is_settings_class(tp):
        return _parse_section(tp, value, path, problems)
    origin = get_origin(tp) or tp
    if origin is Literal:
        return _parse_literal(tp, value, path, problems)
    if origin in (Union, types.UnionType):
        return _parse_union(tp, value, path, problems)
    if origin in (list, tuple):
        return _parse_sequence(tp, value, path, problems)
    if origin is dict:
        return _parse_mapping(tp, value, path, problems)
    if tp is _NONE and value is None:
        return None
    if tp is Name:
        return _parse_name(value, path, problems)
    if tp is WritePath:
        return _parse_write_path(value, path, problems)
    if _scalar_ok(tp, value):
        return float(value) if tp is float else value
    problems.append((path, f"expected {_describe(tp)}, got {_show(value)}{_yaml_hint(tp, value)}"))
    return _FAIL


def _parse_section(cls: type, data: Any, path: str, problems: list[Problem]) -> Any:
    if isinstance(data, cls):
        return data
    data = {} if data is None else data
    if not isinstance(data, Mapping):
        problems.append((path, f"expected mapping, got {_show(data)}"))
        return _FAIL
    fields = _fields(cls)
    before = len(problems)
    for key in data:
        if key not in fields:
            problems.append((key_path(path, key), f"unknown setting{_did_you_mean(key, fields)}"))
    kwargs = {}
    for name, (tp, required) in fields.items():
        if name in data:
            kwargs[name] = _parse(tp, data[name], key_path(path, name), problems)
            _check_bounds(cls, name, kwargs[name], key_path(path, name), problems)
            if tp == Threads and kwargs[name] == "auto":
                _check_auto_threads(key_path(path, name), problems)
        elif required:
            problems.append((key_path(path, name), "missing setting (it has no default)"))
    if len(problems) > before:
        return _FAIL
    return _construct(cls, kwargs, path, problems)


def _check_auto_threads(path: str, problems: list[Problem]) -> None:
    """`threads: auto` where the numeric mode allows it (native only: tasks/core/numerics.py)."""
    from tasks.core import numerics

    try:
        numerics.threads("auto", path)
    except numerics.ThreadsError as exc:
        problems.append(("", str(exc)))


@functools.cache
def _bounds(cls: type) -> dict[str, Bounds]:
    """Each field's bounds, inherited: a subclass that redefines a field only to change its
    default (`epochs: int = 20` over LoopSettings') keeps the base class's bounds."""
    out: dict[str, Bounds] = {}
    for base in reversed(cls.__mro__):
        for f in getattr(base, "__dataclass_fields__", {}).values():
            if "bounds" in f.metadata:
                out[f.name] = f.metadata["bounds"]
    return out


def _check_bounds(cls: type, name: str, value: Any, path: str, problems: list[Problem]) -> None:
    bounds = _bounds(cls).get(name)
    problem = bounds.problem(value) if bounds is not None and value is not _FAIL else None
    if problem:
        problems.append((path, problem))


def _construct(cls: type, kwargs: dict[str, Any], path: str, problems: list[Problem]) -> Any:
    """`cls(**kwargs)`, then its `validate(path)` hook; their complaints become problems."""
    try:
        settings = cls(**kwargs)
        validate = getattr(settings, "validate", None)
        if callable(validate):
            validate(path)
    except ConfigError as exc:
        problems.extend(("", line) for line in exc.problems)
        return _FAIL
    except ValueError as exc:
        problems.append((path, str(exc)))
        return _FAIL
    return settings


def _parse_name(value: Any, path: str, problems: list[Problem]) -> Any:
    if not isinstance(value, str):
        problems.append((path, f"expected str, got {_show(value)}"))
        return _FAIL
    problem = name_problem(value)
    if problem:
        problems.append((path, problem))
        return _FAIL
    return str(value)


def _parse_write_path(value: Any, path: str, problems: list[Problem]) -> Any:
    if not isinstance(value, str):
        problems.append((path, f"expected str, got {_show(value)}"))
        return _FAIL
    try:
        check_write_target(config.resolve_path(value) / "x")  # something written under the folder
    except CorefreproError:
        problems.append((path, f"{value!r} is outside the data roots ({', '.join(DATA_ROOTS)} "
                               f"of the checkout); set {WRITE_ROOTS_ENV} to allow another folder"))  # fmt: skip
        return _FAIL
    return str(value)


def _parse_union(tp: Any, value: Any, path: str, problems: list[Problem]) -> Any:
    """The first arm that takes `value`; arms are tried only where the value's shape fits, so
    a mapping with a typo reports the typo, not "expected ... or None"."""
    arms = get_args(tp)
    if value is None and _NONE in arms:
        return None
    fitting = [arm for arm in arms if arm is not _NONE and _fits(arm, value)]
    first: list[Problem] = []
    for arm in fitting:
        scratch: list[Problem] = []
        result = _parse(arm, value, path, scratch)
        if not scratch:
            return result
        first = first or scratch
    if first:
        problems.extend(first)
    else:
        literals = [o for arm in arms if get_origin(arm) is Literal for o in get_args(arm)]
        hint = _did_you_mean_value(value, literals) or _yaml_hint(tp, value)
        problems.append((path, f"expected {_describe(tp)}, got {_show(value)}{hint}"))
    return _FAIL


def _fits(tp: Any, value: Any) -> bool:
    """Whether `value` has the outer shape of `tp` (its items are checked by parsing)."""
    if tp is Any:
        return True
    if tp is _NONE:
        return value is None
    origin = get_origin(tp) or tp
    if origin is dict:
        return value is None or isinstance(value, Mapping)
    if _is_settings_class(tp):
        return value is None or isinstance(value, Mapping | tp)
    if origin is Literal:
        return _literal_ok(get_args(tp), value)
    if origin in (Union, types.UnionType):
        return any(_fits(arm, value) for arm in get_args(tp))
    if origin in (list, tuple):
        return isinstance(value, list | tuple)
    if tp in (Name, WritePath):
        return isinstance(value, str)
    return _scalar_ok(tp, value)


def _parse_literal(tp: Any, value: Any, path: str, problems: list[Problem]) -> Any:
    options = get_args(tp)
    if _literal_ok(options, value):
        return value
    hint = _did_you_mean_value(value, options)
    problems.append((path, f"expected {_describe(tp)}, got {_show(value)}{hint}"))
    return _FAIL


def _parse_sequence(tp: Any, value: Any, path: str, problems: list[Problem]) -> Any:
    origin, args = get_origin(tp) or tp, get_args(tp)
    if not isinstance(value, list | tuple):
        problems.append((path, f"expected list, got {_show(value)}"))
        return _FAIL
    if origin is tuple and args and args[-1] is not Ellipsis:
        if len(value) != len(args):
            problems.append((path, f"expected a list of {len(args)} items, got {len(value)}"))
            return _FAIL
        item_types = list(args)
    else:
        item_types = [args[0] if args else Any] * len(value)
    before = len(problems)
    items = [
        _parse(item_tp, item, f"{path}[{i}]", problems)
        for i, (item_tp, item) in enumerate(zip(item_types, value, strict=True))
    ]
    if len(problems) > before:
        return _FAIL
    return tuple(items) if origin is tuple else items


def _parse_mapping(tp: Any, value: Any, path: str, problems: list[Problem]) -> Any:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        problems.append((path, f"expected mapping, got {_show(value)}"))
        return _FAIL
    key_tp, item_tp = get_args(tp) or (Any, Any)
    before = len(problems)
    out = {}
    for key, item in value.items():
        sub = key_path(path, key)
        parsed_key = _parse(key_tp, key, f"{sub} (the key)", problems)
        out[parsed_key] = _parse(item_tp, item, sub, problems)
    return _FAIL if len(problems) > before else out


def _scalar_ok(tp: Any, value: Any) -> bool:
    if tp not in _SCALARS:
        return False
    if isinstance(value, bool):  # bool is an int subclass; it counts as no number here
        return tp is bool
    if tp is float:
        return isinstance(value, int | float)
    return isinstance(value, tp)


def _literal_ok(options: tuple[Any, ...], value: Any) -> bool:
    return any(value == o and type(value) is type(o) for o in options)


def _describe(tp: Any) -> str:
    """The expected type in words: int, list, mapping, one of 'a', 'b', int or None."""
    origin = get_origin(tp) or tp
    if origin is Literal:
        return "one of " + ", ".join(repr(o) for o in get_args(tp))
    if origin in (Union, types.UnionType):
        arms = sorted(get_args(tp), key=lambda arm: arm is _NONE)  # None last
        return " or ".join(_describe(arm) for arm in arms)
    if tp is _NONE:
        return "None"
    if _is_settings_class(tp) or origin is dict:
        return "mapping"
    if origin in (list, tuple):
        return "list"
    return getattr(tp, "__name__", repr(tp))


def _show(value: Any) -> str:
    """A given value for a message: its type and (shortened) repr, e.g. str 'ten'."""
    if value is None:
        return "None"
    text = repr(value)
    if len(text) > _REPR_MAX:
        text = text[: _REPR_MAX - 3] + "..."
    return f"{type(value).__name__} {text}"


def _did_you_mean(key: object, known: Iterable[str]) -> str:
    known = list(known)
    close = difflib.get_close_matches(str(key), known, n=1)
    if close:
        return f" (did you mean {close[0]}?)"
    if not known:
        return " (this section takes no settings)"
    return f" (known: {', '.join(known)})"


def _did_you_mean_value(value: Any, options: Iterable[Any]) -> str:
    if not isinstance(value, str):
        return ""
    strings = [o for o in options if isinstance(o, str)]
    close = difflib.get_close_matches(value, strings, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _yaml_hint(tp: Any, value: Any) -> str:
    """Why YAML gave a string for a number (1e-3) or a bool for a word (on, yes, no)."""
    wanted = get_args(tp) if get_origin(tp) in (Union, types.UnionType) else (tp,)
    if float in wanted and isinstance(value, str) and _is_float(value):
        if "e" not in value.lower():
            return " (a quoted number is a string: drop the quotes)"
        return f" (YAML reads {value} as a string: write {_yaml_float(value)})"
    if str in wanted and isinstance(value, bool):
        return " (YAML reads yes/no/on/off unquoted as a bool: quote the word)"
    return ""


def _yaml_float(text: str) -> str:
    """`1e-3` as YAML 1.1 reads it as a float: a dot in the mantissa, a sign on the exponent."""
    mantissa, exponent = text.strip().lower().split("e", 1)
    if "." not in mantissa:
        mantissa += ".0"
    if exponent[:1] not in ("+", "-"):
        exponent = "+" + exponent
    return f"{mantissa}e{exponent}"


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
