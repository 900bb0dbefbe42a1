"""The strict settings parser: every supported type, and the exact message of every problem."""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
import yaml

from tasks.core.errors import CorefreproError
from tasks.core.settings import (
    ConfigError,
    Name,
    bounded,
    key_path,
    load_stage_settings,
    override_settings,
    parse_settings,
    settings_to_dict,
    stage_settings,
)


@dataclass(frozen=True)
class Train:
    epochs: int = 3
    lr: float = 0.001
    batch_size: int = 32
    patience: int | None = None
    amp: bool = True
    device: Literal["auto", "cpu", "cuda"] = "auto"
    max_context_sentences: int = 10


@dataclass(frozen=True)
class Model:
    reader: Literal["bigru", "ga"]
    encoder: str = "gru"
    coref_size: int = 0
    one_hot: bool = False


@dataclass(frozen=True)
class Run:
    models: list[str] = field(default_factory=list)
    tasks: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrainMage:
    data: str
    run: Run = field(default_factory=Run)
    models: dict[str, Model] = field(default_factory=dict)
    task_groups: dict[str, list[str]] = field(default_factory=dict)
    task_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=lambda: [1])
    train: Train = field(default_factory=Train)


@dataclass
class Split:
    """A plain (not frozen) class with a value check through the validate hook."""

    dev_fraction: float = 0.1
    seed: int = 0

    def validate(self, path: str) -> None:
        if not 0 < self.dev_fraction < 1:
            raise ConfigError(
                f"{key_path(path, 'dev_fraction')}: must be in (0, 1), got {self.dev_fraction}"
            )


@dataclass(frozen=True)
class Normalize:
    split: Split = field(default_factory=Split)
    corpora: dict[str, Split] = field(default_factory=dict)


@dataclass(frozen=True)
class Window:
    size: int = 64

    def __post_init__(self) -> None:
        if self.size <= 0:
            raise ValueError(f"size must be positive, got {self.size}")


@dataclass(frozen=True)
class Misc:
    extra: Any = None
    window: Window | None = None
    pair: tuple[int, str] = (1, "a")
    gate: Literal["scalar", "vector"] | None = None
    number: int | float = 0
    name: str = "x"
    plain: list = field(default_factory=list)


@dataclass(frozen=True)
class Empty:
    pass


def problems(cls: type, data: Any, path: str = "stage") -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_settings(cls, data, path)
    assert str(info.value) == "\n".join(info.value.problems)
    return list(info.value.problems)


def test_config_error_is_a_project_error() -> None:
    assert issubclass(ConfigError, CorefreproError)


def test_full_section_parses_into_typed_settings() -> None:
    data = yaml.safe_load(
        """
        data: synthetic-gold
        run: {models: [bigru], tasks: [syn2, qa1]}
        models:
          bigru: {reader: bigru, encoder: gru}
          ga-mage16: {reader: ga, encoder: mage, coref_size: 16}
        task_groups: {syn2: [syn2, syn2_coref]}
        task_settings: {lambada: {output: attention_sum, train_from_dev: 0.8}}
        seeds: [1, 2]
        train: {epochs: 5, lr: 1, patience: null, device: cpu}
        """
    )
    cfg = parse_settings(TrainMage, data, "train_mage")
    assert cfg.run == Run(models=["bigru"], tasks=("syn2", "qa1"))
    assert cfg.models["ga-mage16"] == Model(reader="ga", encoder="mage", coref_size=16)
    assert cfg.task_groups == {"syn2": ["syn2", "syn2_coref"]}
    assert cfg.task_settings["lambada"] == {"output": "attention_sum", "train_from_dev": 0.8}
    assert cfg.seeds == [1, 2]
    assert cfg.train == Train(epochs=5, lr=1.0, device="cpu")
    assert isinstance(cfg.train.lr, float)  # an int given for a float becomes a float


def test_defaults_fill_absent_keys_and_null_sections() -> None:
    cfg = parse_settings(TrainMage, {"data": "d", "train": None, "models": None}, "train_mage")
    assert cfg == TrainMage(data="d")
    assert cfg.train == Train() and cfg.models == {} and cfg.seeds == [1]
    assert parse_settings(Train, None, "train_mage.train") == Train()
    assert parse_settings(Normalize, {"corpora": {"babi": None}}, "n").corpora == {"babi": Split()}


def test_unknown_key_names_the_path_and_the_closest_key() -> None:
    got = problems(TrainMage, {"data": "d", "train": {"epocs": 10}}, "train_mage")
    assert got == ["train_mage.train.epocs: unknown setting (did you mean epochs?)"]


def test_unknown_key_with_nothing_close_lists_the_known_keys() -> None:
    assert problems(Model, {"reader": "ga", "zzz": 1}, "m") == [
        "m.zzz: unknown setting (known: reader, encoder, coref_size, one_hot)"
    ]
    assert problems(Empty, {"x": 1}, "e") == [
        "e.x: unknown setting (this section takes no settings)"
    ]


def test_wrong_type_names_the_path_type_and_value() -> None:
    got = problems(TrainMage, {"data": "d", "train": {"epochs": "ten"}}, "train_mage")
    assert got == ["train_mage.train.epochs: expected int, got str 'ten'"]


def test_missing_required_key() -> None:
    assert problems(TrainMage, {}, "train_mage") == [
        "train_mage.data: missing setting (it has no default)"
    ]
    assert problems(TrainMage, None, "train_mage") == [
        "train_mage.data: missing setting (it has no default)"
    ]


def test_every_problem_of_a_section_is_reported_together() -> None:
    data = {
        "dataa": "d",
        "train": {"epocs": 10, "lr": "fast", "amp": 1},
        "models": {"ga": {"reader": "gaa", "coref_sise": 16}},
        "seeds": [1, "two"],
    }
    assert problems(TrainMage, data, "train_mage") == [
        "train_mage.dataa: unknown setting (did you mean data?)",
        "train_mage.data: missing setting (it has no default)",
        "train_mage.models.ga.coref_sise: unknown setting (did you mean coref_size?)",
        "train_mage.models.ga.reader: expected one of 'bigru', 'ga', got str 'gaa'"
        " (did you mean 'ga'?)",
        "train_mage.seeds[1]: expected int, got str 'two'",
        "train_mage.train.epocs: unknown setting (did you mean epochs?)",
        "train_mage.train.lr: expected float, got str 'fast'",
        "train_mage.train.amp: expected bool, got int 1",
    ]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("epochs", True, "expected int, got bool True"),
        ("epochs", 3.0, "expected int, got float 3.0"),
        ("lr", False, "expected float, got bool False"),
        ("amp", "yes", "expected bool, got str 'yes'"),
        ("amp", 0, "expected bool, got int 0"),
        ("patience", True, "expected int or None, got bool True"),
        ("patience", "5", "expected int or None, got str '5'"),
        ("device", "mps", "expected one of 'auto', 'cpu', 'cuda', got str 'mps'"),
        (
            "device",
            "cudaa",
            "expected one of 'auto', 'cpu', 'cuda', got str 'cudaa' (did you mean 'cuda'?)",
        ),
    ],
)
def test_scalar_strictness(key: str, value: Any, message: str) -> None:
    assert problems(Train, {key: value}, "t") == [f"t.{key}: {message}"]


def test_bool_int_float_accepted_where_exact() -> None:
    cfg = parse_settings(Train, {"epochs": 0, "lr": 0.5, "amp": False, "patience": 7}, "t")
    assert (cfg.epochs, cfg.lr, cfg.amp, cfg.patience) == (0, 0.5, False, 7)
    assert parse_settings(Train, {"patience": None}, "t").patience is None


def test_yaml_number_and_bool_pitfalls_get_a_hint() -> None:
    assert problems(Train, yaml.safe_load("lr: 1e-3"), "t") == [
        "t.lr: expected float, got str '1e-3' (YAML reads 1e-3 as a string: write 1.0e-3)"
    ]
    assert problems(Train, {"lr": "0.5"}, "t") == [
        "t.lr: expected float, got str '0.5' (a quoted number is a string: drop the quotes)"
    ]
    assert problems(Misc, yaml.safe_load("name: on"), "m") == [
        "m.name: expected str, got bool True"
        " (YAML reads yes/no/on/off unquoted as a bool: quote the word)"
    ]


def test_literal_or_none_and_unions() -> None:
    assert parse_settings(Misc, {"gate": "vector"}, "m").gate == "vector"
    assert parse_settings(Misc, {"gate": None}, "m").gate is None
    assert problems(Misc, {"gate": "scaler"}, "m") == [
        "m.gate: expected one of 'scalar', 'vector' or None, got str 'scaler'"
        " (did you mean 'scalar'?)"
    ]
    assert parse_settings(Misc, {"number": 2}, "m").number == 2
    assert isinstance(parse_settings(Misc, {"number": 2}, "m").number, int)
    assert parse_settings(Misc, {"number": 2.5}, "m").number == 2.5
    assert problems(Misc, {"number": True}, "m") == [
        "m.number: expected int or float, got bool True"
    ]


def test_optional_section_reports_problems_inside_it() -> None:
    assert parse_settings(Misc, {"window": {"size": 8}}, "m").window == Window(8)
    assert parse_settings(Misc, {"window": None}, "m").window is None
    assert problems(Misc, {"window": {"sise": 8}}, "m") == [
        "m.window.sise: unknown setting (did you mean size?)"
    ]
    assert problems(Misc, {"window": 8}, "m") == ["m.window: expected mapping or None, got int 8"]


def test_containers_check_their_items_and_shape() -> None:
    assert parse_settings(Misc, {"pair": [2, "b"]}, "m").pair == (2, "b")
    assert problems(Misc, {"pair": [2, "b", 3]}, "m") == [
        "m.pair: expected a list of 2 items, got 3"
    ]
    assert problems(Misc, {"pair": ["2", "b"]}, "m") == ["m.pair[0]: expected int, got str '2'"]
    assert problems(Run, {"models": "bigru"}, "r") == ["r.models: expected list, got str 'bigru'"]
    assert problems(Run, {"tasks": ["qa1", 2]}, "r") == ["r.tasks[1]: expected str, got int 2"]
    assert parse_settings(Misc, {"plain": [1, "a"]}, "m").plain == [1, "a"]
    data = {"data": "d", "task_groups": {"g": "qa1"}, "models": ["bigru"]}
    assert problems(TrainMage, data, "tm") == [
        "tm.models: expected mapping, got list ['bigru']",
        "tm.task_groups.g: expected list, got str 'qa1'",
    ]


def test_dict_keys_are_checked() -> None:
    assert problems(TrainMage, {"data": "d", "task_groups": {1: ["qa1"]}}, "tm") == [
        "tm.task_groups.1 (the key): expected str, got int 1"
    ]


def test_section_must_be_a_mapping() -> None:
    assert problems(TrainMage, ["data"], "train_mage") == [
        "train_mage: expected mapping, got list ['data']"
    ]


def test_long_values_are_shortened_in_messages() -> None:
    (got,) = problems(Train, {"epochs": "x" * 200}, "t")
    assert got.startswith("t.epochs: expected int, got str 'xxx") and got.endswith("...")
    assert len(got) < 100


def test_any_is_passed_through_as_a_copy() -> None:
    given = {"nested": [1, {"a": None}]}
    cfg = parse_settings(Misc, {"extra": given}, "m")
    assert cfg.extra == given and cfg.extra is not given
    cfg.extra["nested"].append(2)
    assert given == {"nested": [1, {"a": None}]}


def test_validate_hook_reports_bad_values_with_their_path() -> None:
    assert parse_settings(Split, {"dev_fraction": 0.2}, "s").dev_fraction == 0.2
    data = {"split": {"dev_fraction": 1.5}, "corpora": {"babi": {"dev_fraction": 0}}}
    assert problems(Normalize, data, "normalize") == [
        "normalize.split.dev_fraction: must be in (0, 1), got 1.5",
        "normalize.corpora.babi.dev_fraction: must be in (0, 1), got 0.0",
    ]


def test_validate_runs_only_on_cleanly_parsed_fields() -> None:
    assert problems(Normalize, {"split": {"dev_fraction": "half"}}, "n") == [
        "n.split.dev_fraction: expected float, got str 'half'"
    ]


def test_value_error_from_post_init_is_reported_at_the_section() -> None:
    assert problems(Misc, {"window": {"size": 0}, "name": 3}, "m") == [
        "m.window: size must be positive, got 0",
        "m.name: expected str, got int 3",
    ]


def test_unsupported_field_type_is_a_programming_error() -> None:
    @dataclass
    class Bad:
        tags: set[str] = field(default_factory=set)

    with pytest.raises(TypeError, match=r"Bad\.tags: unsupported settings type"):
        parse_settings(Bad, {}, "b")
    with pytest.raises(TypeError, match="not a dataclass"):
        parse_settings(dict, {}, "b")


def test_settings_to_dict_round_trips() -> None:
    data = {
        "data": "d",
        "run": {"models": ["bigru"], "tasks": ["qa1"]},
        "models": {"ga": {"reader": "ga", "coref_size": 16}},
        "task_settings": {"qa3": {"max_context_sentences": 5}},
        "train": {"lr": 1},
    }
    cfg = parse_settings(TrainMage, data, "train_mage")
    plain = settings_to_dict(cfg)
    assert plain["run"] == {"models": ["bigru"], "tasks": ["qa1"]}  # a tuple becomes a list
    assert plain["models"]["ga"] == {
        "reader": "ga",
        "encoder": "gru",
        "coref_size": 16,
        "one_hot": False,
    }
    assert plain["train"]["lr"] == 1.0
    assert parse_settings(TrainMage, plain, "train_mage") == cfg
    assert yaml.safe_load(yaml.safe_dump(plain)) == plain
    assert json.loads(json.dumps(plain)) == plain
    with pytest.raises(TypeError, match="not a dataclass instance"):
        settings_to_dict(TrainMage)


def test_override_applies_strictly_with_the_override_path() -> None:
    train = Train(epochs=3, lr=0.01)
    qa3 = override_settings(train, {"max_context_sentences": 20, "epochs": 5}, "tm.qa3")
    assert qa3 == Train(epochs=5, lr=0.01, max_context_sentences=20)
    assert train == Train(epochs=3, lr=0.01)
    assert override_settings(train, None, "tm.qa3") is train
    with pytest.raises(ConfigError) as info:
        override_settings(
            train,
            {"max_context_sentenses": 20, "epochs": "5"},
            "train_mage.task_settings.qa3",
        )
    assert info.value.problems == (
        "train_mage.task_settings.qa3.max_context_sentenses: unknown setting"
        " (did you mean max_context_sentences?)",
        "train_mage.task_settings.qa3.epochs: expected int, got str '5'",
    )


def test_override_merges_nested_sections_and_replaces_lists() -> None:
    cfg = TrainMage(
        data="d",
        models={"ga": Model(reader="ga", coref_size=16)},
        seeds=[1, 2],
        train=Train(epochs=9),
    )
    new = override_settings(
        cfg,
        {"train": {"lr": 0.5}, "models": {"ga": {"one_hot": True}}, "seeds": [3]},
        "o",
    )
    assert new.train == Train(epochs=9, lr=0.5)
    assert new.models == {"ga": Model(reader="ga", coref_size=16, one_hot=True)}
    assert new.seeds == [3]
    assert override_settings(cfg, {"train": Train(epochs=1)}, "o").train == Train(epochs=1)


def test_override_checks_values_and_shape() -> None:
    with pytest.raises(ConfigError) as info:
        override_settings(Split(), {"dev_fraction": 2}, "normalize.babi")
    assert str(info.value) == "normalize.babi.dev_fraction: must be in (0, 1), got 2.0"
    with pytest.raises(ConfigError, match=r"^o: expected mapping, got list \[1\]$"):
        override_settings(Split(), [1], "o")  # type: ignore[arg-type]


def test_load_stage_settings_reads_the_stage_section(tmp_path) -> None:
    params_file = tmp_path / "params.yaml"
    params_file.write_text(
        "train_mage:\n  data: synthetic-gold\n  train: {epochs: 7, lr: 1.0e-3}\n"
        "broken:\n  data: x\n  train: {epocs: 7}\n",
        encoding="utf-8",
    )
    cfg = load_stage_settings(TrainMage, "train_mage", params_file)
    assert cfg.data == "synthetic-gold" and cfg.train == Train(epochs=7, lr=0.001)
    with pytest.raises(ConfigError, match=r"^broken\.train\.epocs: unknown setting"):
        load_stage_settings(TrainMage, "broken", params_file)
    with pytest.raises(CorefreproError, match="no 'absent' section"):
        load_stage_settings(TrainMage, "absent", params_file)


def test_a_stage_section_is_parsed_once_per_process_while_it_is_unchanged(tmp_path,
                                                                           monkeypatch) -> None:  # fmt: skip
    """stage_settings (every train_<family> stage's settings()): the CLI's train.nproc and the
    flow read one parse; another params file or a section changed in place is parsed anew."""
    from tasks.core import config
    from tasks.core import settings as settings_module

    params_file, other = tmp_path / "params.yaml", tmp_path / "other.yaml"
    params_file.write_text("train_mage:\n  data: g\n  train: {epochs: 7}\n", encoding="utf-8")
    other.write_text("train_mage:\n  data: g\n  train: {epochs: 9}\n", encoding="utf-8")
    calls: list[str] = []
    parse = settings_module.parse_settings
    monkeypatch.setattr(settings_module, "parse_settings",
                        lambda cls, raw, path: calls.append(path) or parse(cls, raw, path))  # fmt: skip
    first = stage_settings(TrainMage, "train_mage", params_file)
    assert stage_settings(TrainMage, "train_mage", params_file) is first
    assert calls == ["train_mage"] and first.train.epochs == 7
    assert stage_settings(TrainMage, "train_mage", other).train.epochs == 9
    config.params("train_mage", params_file)["train"]["epochs"] = 8  # a test's own params
    assert stage_settings(TrainMage, "train_mage", params_file).train.epochs == 8
    assert len(calls) == 3


def test_config_error_survives_pickling() -> None:
    err = ConfigError(["a.b: one", "a.c: two"])
    back = pickle.loads(pickle.dumps(err))
    assert back.problems == ("a.b: one", "a.c: two") and str(back) == str(err)
    assert ConfigError("a: only").problems == ("a: only",)


@dataclass
class NamedSettings:
    corpus: Name = "x"
    runs: dict[Name, int] = field(default_factory=dict)
    corpora: list[Name] = field(default_factory=list)


@pytest.mark.parametrize("bad", ["../x", "/tmp/x", "a/b", ".hidden", "..", "", "a..b"])
def test_name_settings_refuse_path_escapes(bad):
    """Issue #14.3: a run/corpus name becomes a directory under data/: one pattern, checked
    where params are parsed."""
    for data, where in (
        ({"corpus": bad}, "s.corpus:"),
        ({"runs": {bad: 1}}, "(the key)"),
        ({"corpora": ["ok", bad]}, "s.corpora[1]:"),
    ):
        with pytest.raises(ConfigError, match="is not a safe name") as err:
            parse_settings(NamedSettings, data, "s")
        assert where in str(err.value)
    assert parse_settings(
        NamedSettings, {"corpus": "gum-gold", "corpora": ["babi-mix", "en_10k.v2"]}, "s"
    )


def test_params_read_floats_as_dvc_writes_them():
    """`dvc exp run -S lr=1.0e-5` writes `1e-05`: a float for DVC (YAML 1.2), a string for
    PyYAML; params.yaml's reader agrees with DVC."""
    from tasks.core.config import load_yaml

    data = load_yaml("lr: 1e-05\nsmall: -2.5E+3\nword: e5\nversion: 1.10\nn: 100\n")
    assert data == {"lr": 1e-05, "small": -2500.0, "word": "e5", "version": 1.1, "n": 100}


@dataclass(frozen=True)
class Ranged:
    lr: float = bounded(0.001, gt=0)
    dropout: float = bounded(0.1, ge=0, lt=1)
    patience: int | None = bounded(5, ge=1)
    seeds: list[int] = bounded([1], min_items=1)


def test_bounds_are_checked_where_declared_with_one_line_each():
    with pytest.raises(ConfigError) as err:
        parse_settings(Ranged, {"lr": -1, "dropout": 1.5, "patience": 0, "seeds": []}, "t")
    assert err.value.problems == (
        "t.lr: must be > 0, got -1.0",
        "t.dropout: must be < 1, got 1.5",
        "t.patience: must be >= 1, got 0",
        "t.seeds: needs at least 1 item(s), got 0",
    )


def test_bounds_pass_none_edges_and_copy_list_defaults():
    ok = parse_settings(Ranged, {"lr": 1e-9, "dropout": 0, "patience": None, "seeds": [3]}, "t")
    assert (ok.lr, ok.dropout, ok.patience, ok.seeds) == (1e-9, 0.0, None, [3])
    a, b = Ranged(), Ranged()
    assert a.seeds == [1] and a.seeds is not b.seeds
    with pytest.raises(ConfigError, match=r"t.seeds\[0\]: expected int"):
        parse_settings(Ranged, {"seeds": ["x"]}, "t")  # a type problem is not also a range one


@dataclass(frozen=True)
class RangedChild(Ranged):
    lr: float = 0.01  # a new default only: the base's bound still holds


def test_a_subclass_default_keeps_the_base_bounds():
    assert RangedChild().lr == 0.01
    with pytest.raises(ConfigError, match=r"t.lr: must be > 0, got 0.0"):
        parse_settings(RangedChild, {"lr": 0}, "t")


def test_a_bad_key_every_model_entry_inherits_is_reported_once():
    """Issue #59 row 7: train_mage.train is parsed per model entry; the problem prints once."""
    from flows.train_mage import TrainMageSettings
    from tasks.core.settings import ConfigError, parse_settings

    data = {"models": {"a": {"reader": "bigru"}, "b": {"reader": "ga"}},
            "train": {"bogus_key": 1}}  # fmt: skip
    with pytest.raises(ConfigError) as err:
        parse_settings(TrainMageSettings, data, "train_mage")
    assert (
        err.value.problems.count(
            next(p for p in err.value.problems if p.startswith("train_mage.train.bogus_key"))
        )
        == 1
    )
    assert str(err.value).count("train_mage.train.bogus_key") == 1
