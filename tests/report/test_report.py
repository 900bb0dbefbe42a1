"""The report stage: the paper yaml, rendering from small metrics fixtures, determinism, and
the dispatch of each paper table to its model family's renderer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import flows.report as report_flow
from models import registry
from tasks.core.config import REPO_ROOT, params
from tasks.core.errors import DataError
from tasks.core.settings import parse_settings, settings_to_dict
from tasks.report import build as report
from tasks.report import common
from tasks.report.common import ReportSettings

SPEC = REPO_ROOT / "tasks" / "report" / "paper_results.yaml"
REPORTS = registry.reports()  # the sections, as flows/report.py hands them over
SECTIONS = report.sections(REPORTS)
PAPERS = REPO_ROOT.parent / "shared" / "papers"


@pytest.fixture(scope="module")
def spec():
    return report.load_spec(SPEC, SECTIONS)


def _table(spec, table_id):
    return next(t for t in spec["tables"] if t["id"] == table_id)


def _row(spec, table_id, model):
    return next(r for r in _table(spec, table_id)["rows"] if r.get("model") == model)


def _write(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True), encoding="utf-8")


def _put(root: str | Path, obj) -> Path:
    """A reader's metrics as metrics/train_mage/<model>-<task>.json, a coref encoder's as
    metrics/train_coref/<encoder>.json (the names the training stages give them)."""
    name = obj["encoder"] if "encoder" in obj else f"{obj['model']}-{obj['task']}"
    path = Path(root) / f"{name}.json"
    _write(path, obj)
    return path


def _reader(model, task, corpus, test_error, dev_acc=0.9, seeds=3, **extra):
    """A metrics/train_mage/<model>-<task>.json as models/mage/train.py summarize writes it."""
    return {
        "model": model,
        "task": task,
        "dataset": f"{corpus}/{task}",
        "dev_acc": dev_acc,
        "dev_error": 1 - dev_acc,
        "test_acc": 1 - test_error,
        "test_error": test_error,
        "test_error_mean": test_error,
        "test_error_std": 0.01,
        "seeds": seeds,
        "selected_seed": 2,
        **extra,
    }


def _coref(encoder, test_f1, dev_f1, seeds=2):
    """A metrics/train_coref/<encoder>.json as models/coref/train.py summarize writes it."""
    scores = {"muc_f1": 0.7, "bcub_f1": 0.6, "ceafe_f1": 0.5, "muc_p": 0.8, "muc_r": 0.62}
    return {
        "encoder": encoder,
        "dataset": "gum+litbank",
        "embeddings": "glove",
        "seeds": seeds,
        "selected_seed": 1,
        "dev": {"conll_f1": {"mean": dev_f1, "std": 0.01}},
        "test": {
            "conll_f1": {"mean": test_f1, "std": 0.02},
            **{k: {"mean": v, "std": 0.0} for k, v in scores.items() if k.endswith("f1")},
        },
        "selected": {"test": {"conll_f1": test_f1, **scores}, "dev": {"conll_f1": dev_f1}},
    }


@pytest.fixture
def metrics(tmp_path):
    """Small flat metrics directories: two bAbI tasks of bigru, one of an unmapped model,
    LAMBADA with subsets, the synthetic embedded default, a run of no table, and two of three
    encoders."""
    mage, coref = tmp_path / "train_mage", tmp_path / "train_coref"
    _put(mage, _reader("bigru", "qa1", "babi", 0.125))
    _put(mage, _reader("bigru", "qa2", "babi", 0.03))
    _put(mage, _reader("bigru-mage32", "qa1", "babi", 0.0))
    subsets = {"context": {"dev_acc": 0.5, "test_acc": 0.25, "n": 4}}
    _put(mage, _reader("ga", "lambada", "lambada", 0.6, 0.375, 1, subsets=subsets))
    _put(mage, _reader("ga-mage16", "qa3", "babi-mix", 0.02))
    notes = {"train": "carved from dev"}
    _put(mage, _reader("bigru", "syn2", "synthetic", 0.5, split_notes=notes))
    _put(mage, _reader("bigru", "wt2", "wikitext2", 0.5))
    _put(coref, _coref("baseline", 0.60, 0.58))
    _put(coref, _coref("asl", 0.61, 0.585))
    # EntityNLM, CoreLM: empty directories, never the checkout's metrics/train_*
    return {"mage": str(mage), "coref": str(coref), "entitynlm": str(tmp_path / "train_entitynlm"),
            "corelm": str(tmp_path / "train_corelm")}  # fmt: skip


def _outputs(tmp_path) -> dict:
    """Figures, summaries and the inputs of the figures inside tmp_path (never the repo's)."""
    return {
        "figures": str(tmp_path / "out" / "figures"),
        "summary": str(tmp_path / "out" / "summary"),
        "artifacts": {
            "mage": str(tmp_path / "artifacts_mage"),
            "coref": str(tmp_path / "x"),
            "entitynlm": str(tmp_path / "y"),
        },  # fmt: skip
        "annotation_metrics": str(tmp_path / "annotate"),
        "corpus_plots": str(tmp_path / "corpus_plots"),
    }


def _build(tmp_path, metrics, name="results.md") -> str:
    cfg = {
        "paper_results": str(SPEC),
        "metrics": metrics,
        "output": str(tmp_path / "out" / name),
        **_outputs(tmp_path),
    }
    cfg = parse_settings(ReportSettings, cfg, "report")
    return report.build(REPORTS, cfg, annotation="babi-entity-id").read_text(encoding="utf-8")


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


# --------------------------------------------------------------------------- the yaml


def test_every_paper_table_names_its_paper_and_numbers_are_floats(spec):
    raw = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    assert {t["kind"] for t in spec["tables"]} == set(report.by_kind(SECTIONS))
    for table, raw_table in zip(spec["tables"], raw["tables"], strict=True):
        if table["kind"] == "runs":
            continue
        paper = spec["papers"][table["paper"]]
        assert paper["file"].endswith(".txt") and table["table"].startswith("Table ")
        for row, raw_row in zip(table["rows"], raw_table["rows"], strict=True):
            values = raw_row.get("values")
            printed = values if isinstance(values, list) else list((values or {}).values())
            assert all(type(v) is float for v in printed), (table["id"], row["paper_row"])
            assert row["values"] or row.get("printed"), row
            assert row.get("avg") is None or type(raw_row["avg"]) is float
            assert row.get("failed") is None or type(row["failed"]) is int
    models = {r["model"] for t in spec["tables"] for r in t.get("rows", []) if r.get("model")}
    # params.yaml train_mage.models keys the paper rows must cover
    assert {"bigru", "bigru-onehot", "bigru-mage16", "ga", "ga-dagrnn", "ga-mage-shared"} <= models
    assert {"ga-mage16", "baseline", "lsl", "asl"} <= models


def _printed(value: float, digits: int) -> str:
    return str(int(value)) if digits == 3 and value == int(value) else f"{value:.{digits}f}"


def test_transcribed_numbers_appear_in_the_paper_text(spec):
    """Each row's numbers, formatted as the paper prints them, occur in that order in the
    paper's text extraction: a typo in the yaml fails here."""
    if not PAPERS.is_dir():
        pytest.skip(f"papers directory not found ({PAPERS})")
    checked = 0
    for table in spec["tables"]:
        if table["kind"] == "runs":
            continue
        text = " ".join((PAPERS / spec["papers"][table["paper"]]["file"]).read_text().split())
        digits = int(table.get("digits", 1))
        for row in table["rows"]:
            keys = table["columns"] if table["kind"] != "accuracy" else None
            keys = keys or [c["key"] for c in table["columns"]]
            numbers = [_printed(row["values"][k], digits) for k in keys if k in row["values"]]
            if table["id"] == "mage-babi-mix":
                numbers = [_printed(row["avg"], 1), *numbers]  # printed "Average  Task 3"
            elif row.get("avg") is not None:
                numbers += [_printed(row["avg"], 1), str(row["failed"])]
            wanted = " ".join(numbers) if numbers else row["printed"]
            assert f" {wanted} " in f" {text} ", (table["id"], row["paper_row"], wanted)
            checked += 1
    # rows of MAGE Tables 1, 2, 3, 5; Luo & Glass Table 1; Ji et al. Tables 1, 2, 3
    assert checked == 10 + 3 + 11 + 8 + 6 + 3 + 3 + 5


@pytest.mark.parametrize(
    "patch, message",
    [
        (lambda s: s["tables"][0].pop("paper"), "needs 'paper'"),
        (lambda s: s["tables"][0]["rows"][0]["values"].__setitem__(0, "0.1"), "not a number"),
        (lambda s: s["tables"][0]["rows"][0]["values"].pop(), "19 values, 20 columns"),
        (lambda s: s["tables"][2]["rows"][2]["values"].__setitem__("val", 0.5), "unknown col"),
    ],
)
def test_bad_paper_yaml_names_the_file_and_table(tmp_path, patch, message):
    raw = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    patch(raw)
    bad = tmp_path / "paper_results.yaml"
    bad.write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(DataError) as err:
        report.load_spec(bad, SECTIONS)
    assert str(bad) in str(err.value) and message in str(err.value)


# --------------------------------------------------------------------------- rendering


def test_babi_cells_means_and_failed_counts_over_measured_tasks(tmp_path, metrics, spec):
    text = _build(tmp_path, metrics)
    paper = _row(spec, "mage-babi", "bigru")["values"]
    p1, p2 = paper["qa1"], paper["qa2"]
    assert f"| 1 (`qa1`) | 12.5 ({p1:.1f}) |" in text
    assert f"| 2 (`qa2`) | 3.0 ({p2:.1f}) |" in text
    # an unmeasured model reads "—" beside the paper's number
    ga1 = _row(spec, "mage-babi", "ga")["values"]["qa1"]
    assert f"— ({ga1:.1f})" in _line(text, "| 1 (`qa1`)")
    # a measured model with no paper row gets its own column
    assert "`bigru-mage32` (no paper row)" in text
    mean = _line(text, "| Mean error over the tasks we measured")
    assert f"| {(12.5 + 3.0) / 2:.1f} ({(p1 + p2) / 2:.1f}) over 2 tasks |" in mean
    fails = _line(text, "| Failed tasks (> 5% error)")
    assert f"| 1 of 2 ({sum(v > 5 for v in (p1, p2))}) |" in fails
    assert "- bi-GRU `bigru`: qa1, qa2" in text
    assert "the paper's printed Avg is over all 20 tasks" in text
    assert "babi-entity-id" in text  # the annotation run the readers used


def test_a_sampled_test_set_points_to_the_dev_error(tmp_path, metrics):
    assert "Test sets under 100 questions" not in _build(tmp_path, metrics)
    small = _reader("bigru", "qa2", "babi", 0.5, dev_acc=0.45, test_n=10)
    _put(metrics["mage"], small)
    text = _build(tmp_path / "again", metrics)
    assert "`bigru` qa2 (10 questions, dev error 55.0%)" in text


def test_babi_mix_runs_go_to_table_2_only(tmp_path, metrics, spec):
    text = _build(tmp_path, metrics)
    table1, table2 = text.split("## Dhingra et al. (MAGE-GRU), Table ")[1:3]
    shared = _row(spec, "mage-babi-mix", "ga-mage-shared")["values"]["qa3"]
    mix = _row(spec, "mage-babi-mix", "ga-mage16")
    assert f"| 3 (`qa3`) | — ({shared:.1f}) | 2.0 ({mix['values']['qa3']:.1f}) |" in table2
    assert f"{mix['avg']:.1f}" in _line(table2, "| Paper Avg")
    qa3 = _row(spec, "mage-babi", "ga-mage16")["values"]["qa3"]
    assert f"| — ({qa3:.1f}) |" in _line(table1, "| 3 (`qa3`)")
    assert "2.0 (" not in _line(table1, "| 3 (`qa3`)")


def test_accuracy_tables_read_subsets_and_fall_back_to_top_level(tmp_path, metrics, spec):
    text = _build(tmp_path, metrics)
    paper = _row(spec, "mage-lambada", "ga")["values"]
    line = _line(text, "| GA | `ga` |")
    assert f"0.500 ({paper['context_val']:.3f})" in line  # subsets.context.dev_acc
    assert f"0.250 ({paper['context_test']:.3f})" in line
    assert f"0.375 ({paper['all_val']:.3f})" in line  # no subsets.all: top-level dev_acc
    cnn = _row(spec, "mage-cnn", "ga")["values"]
    assert f"| GA ‡ | `ga` | — ({cnn['val']:.3f}) | — ({cnn['test']:.3f}) |" in text
    assert 'printed "0.118"' in text


def test_coref_means_deltas_and_criterion(tmp_path, metrics, spec):
    text = _build(tmp_path, metrics)
    base = _row(spec, "coref-conll2012", "baseline")["values"]["avg_f1"]
    asl = _row(spec, "coref-conll2012", "asl")["values"]["avg_f1"]
    lsl = _row(spec, "coref-conll2012", "lsl")["values"]["avg_f1"]
    baseline = _line(text, "| Lee et al. (2017) | `baseline` | 2 |")
    assert f"| 60.0 ± 2.0 ({base:.1f}) | 58.0 ± 1.0 |" in baseline  # test ours (paper), dev
    delta = _line(text, "| `asl` − `baseline` |")  # ours test, ours dev, paper, criterion
    assert delta.endswith(f"| +1.00 | +0.50 | {asl - base:+.1f} | test ≥ +0.6: met |")
    # lsl has no metrics file: its delta and cells read "—"
    assert f"| `lsl` − `baseline` | — | — | {lsl - base:+.1f} | — |" in text
    assert f"| E2E-CR + LSL | `lsl` | — | — ({lsl:.1f}) |" in text
    assert "`gum+litbank`" in text and "OntoNotes" in text


def test_embedded_default_and_unmatched_runs_are_listed(tmp_path, metrics):
    text = _build(tmp_path, metrics)
    embedded = text.split("## Embedded default")[1].split("## ")[0]
    assert "synthetic/syn2" in embedded and "wikitext2" not in embedded
    assert "train: carved from dev" in embedded  # the metrics' split_notes
    other = text.split("## Other measured runs")[1]
    assert "wikitext2/wt2" in other and "synthetic/syn2" not in other


def test_missing_metrics_dirs_give_dashes_not_a_crash(tmp_path):
    missing = {"mage": str(tmp_path / "no-mage"), "coref": str(tmp_path / "no-coref")}
    text = _build(tmp_path, missing)
    assert "| 1 (`qa1`) | — (" in text
    assert "| `asl` − `baseline` | — | — |" in text
    assert "No metrics files matched" in text and "## Other measured runs" not in text


def test_bad_metrics_json_names_the_file(tmp_path, metrics):
    bad = Path(metrics["mage"]) / "ga-cnn.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError) as err:
        _build(tmp_path, metrics)
    assert "ga-cnn.json:1" in str(err.value)


def test_model_task_and_encoder_come_from_the_metrics_not_the_file_name(tmp_path, metrics):
    """Model keys contain hyphens ("bigru-mage32-qa1.json"), so the keys inside the file say
    which run it is; a renamed file renders the same cells."""
    mage, coref = Path(metrics["mage"]), Path(metrics["coref"])
    (mage / "bigru-qa1.json").rename(mage / "renamed.json")
    (coref / "asl.json").rename(coref / "encoder-2.json")
    text = _build(tmp_path, metrics)
    assert "| 1 (`qa1`) | 12.5 (" in text and "renamed.json" in text
    assert _line(text, "| `asl` − `baseline` |").startswith("| `asl` − `baseline` | +1.00 |")
    assert "encoder-2.json" in text


@pytest.mark.parametrize(
    "source, name, change, message",
    [
        ("mage", "copy.json", lambda m: m, "model 'bigru' task 'qa1' again"),
        (
            "mage",
            "bigru-qa1.json",
            lambda m: {k: v for k, v in m.items() if k != "task"},
            'needs the key "task"',
        ),
        ("coref", "copy.json", lambda m: m, "encoder 'asl' again"),
        ("coref", "asl.json", lambda m: {**m, "encoder": None}, 'needs the key "encoder"'),
    ],
)
def test_duplicate_or_unnamed_runs_name_the_file(tmp_path, metrics, source, name, change, message):
    root = Path(metrics[source])
    original = json.loads(
        (root / ("asl.json" if source == "coref" else "bigru-qa1.json")).read_text()
    )
    _write(root / name, change(original))
    with pytest.raises(DataError) as err:
        _build(tmp_path, metrics)
    assert name in str(err.value) and message in str(err.value)


def test_every_table_kind_dispatches_to_the_family_of_its_source(spec):
    """paper_results.yaml kinds = the kinds of the registry families' report sections (one
    section per family, its source the family's name); each family reads the metrics
    directory of its source, params.yaml report.metrics (the flat train_* stage directories)."""
    assert [sec.source for sec in SECTIONS] == list(registry.FAMILIES)
    kinds = report.by_kind(SECTIONS)
    assert {t["kind"] for t in spec["tables"]} == set(kinds)
    for table in spec["tables"]:
        assert kinds[table["kind"]].source == table["source"], table["id"]
    dirs = {
        "mage": "metrics/train_mage",
        "coref": "metrics/train_coref",
        "entitynlm": "metrics/train_entitynlm",
        "corelm": "metrics/train_corelm",
    }
    assert settings_to_dict(common.ReportMetrics()) == params()["report"]["metrics"] == dirs


def test_output_is_deterministic(tmp_path, metrics):
    first = _build(tmp_path, metrics, "a.md")
    # same metrics written again in another order: same bytes
    for path in sorted(Path(metrics["mage"]).glob("*.json"), reverse=True):
        path.write_text(json.dumps(json.loads(path.read_text()), indent=1), encoding="utf-8")
    assert _build(tmp_path, metrics, "b.md") == first
    assert (tmp_path / "out" / "a.md").read_bytes() == (tmp_path / "out" / "b.md").read_bytes()


def test_flow_writes_the_report(tmp_path, metrics, monkeypatch):
    cfg = {
        "paper_results": str(SPEC),
        "metrics": metrics,
        "output": str(tmp_path / "flow.md"),
        **_outputs(tmp_path),
    }
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    monkeypatch.setattr(report, "settings", lambda: parse_settings(ReportSettings, cfg, "report"))
    report_flow.main([])
    assert (tmp_path / "flow.md").read_text(encoding="utf-8").startswith("# Results beside")


def test_flow_names_a_missing_paper_file_in_one_error_line(tmp_path, monkeypatch, capsys):
    cfg = ReportSettings(paper_results=str(tmp_path / "nope.yaml"), output=str(tmp_path / "x.md"))
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    monkeypatch.setattr(report, "settings", lambda: cfg)
    with pytest.raises(SystemExit) as exit_:
        report_flow.main([])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: ") and "nope.yaml" in err and "report.paper_results" in err
    assert not (tmp_path / "x.md").exists()


# --------------------------------------------------------------------------- readability (#17.5)


def test_report_opens_with_what_was_measured_beside_the_paper(tmp_path, metrics, spec):
    text = _build(tmp_path, metrics)
    glance = text.split("## Smoke run on generated data: what this workspace's run measured", 1)[
        1
    ].split("\n## ", 1)[0]
    p1 = _row(spec, "mage-babi", "bigru")["values"]["qa1"]
    row = _line(glance, "| mage | Table 1 (mage-babi) | `bigru` qa1 |")
    assert "| test error % | 12.50 | test" in row and f"{p1:.2f}" not in row  # no paper beside
    assert "| babi/qa1 | 3 |" in row  # data and seeds stated
    # the smoke run sets no paper figure beside its numbers (the tables below do)
    assert "| `bigru` syn2 | test error % | 50.00 | test" in glance
    assert text.index("## Smoke run") < text.index("## Dhingra et al. (MAGE-GRU), Table 1")


def test_unmeasured_tables_and_tasks_are_folded(tmp_path, metrics):
    text = _build(tmp_path, metrics)
    cnn = text.split("Table 5", 1)[1].split("\n## ", 1)[0]  # the CNN table: nothing measured
    assert "<details><summary>Not measured in this run" in cnn
    babi = text.split("Table 1 — bAbI 1k", 1)[1].split("\n## ", 1)[0]
    shown = babi.split("<details>", 1)[0]
    assert "| 1 (`qa1`)" in shown and "| 5 (`qa5`)" not in shown  # measured tasks lead
    assert "Paper numbers of the 18 tasks not measured here" in babi
    assert "](../../shared/papers/004_1c2a477946dedb62.txt)" in text  # paper path resolves


def _paper(value) -> dict:
    return {} if value is None else {"paper": value}


def test_short_summary_metrics_and_figures_per_family(tmp_path, metrics, spec):
    history = [{"epoch": e, "train_loss": 1.0 / e, "dev_acc": 0.1 * e} for e in (1, 2, 3)]
    _write(tmp_path / "artifacts_mage" / "bigru-qa1" / "seed1" / "history.json", history)
    _write(tmp_path / "annotate" / "gum-gold.json", {"dev": {"conll_f1": 1.0, "muc_f1": 1.0}})
    stale = tmp_path / "out" / "summary" / "mage.json"  # the one-file-per-family layout
    _write(stale, {"bigru_babi_err": {"ours": 1.0}})
    text = _build(tmp_path, metrics)
    # the DVC metrics: a file per headline figure, {ours, paper} (#55.4), so `dvc metrics
    # show` is a row per figure in three columns; splits and deltas are in the report
    root = tmp_path / "out" / "summary"
    summary = {p.stem: json.loads(p.read_text()) for p in (root / "mage").glob("*.json")}
    bigru = _row(spec, "mage-babi", "bigru")["values"]
    mix = _row(spec, "mage-babi-mix", "ga-mage16")["values"].get("qa3")
    assert summary == {
        # a bAbI table: the mean over the tasks we measured, the paper's over the same tasks
        "bigru_babi_err": {"ours": 7.75, "paper": round((bigru["qa1"] + bigru["qa2"]) / 2, 2)},
        "bigru-mage32_babi_err": {"ours": 0.0},  # no paper row: no paper column
        "ga-mage16_babi-mix_err": {"ours": 2.0, **_paper(mix)},
        "ga_lambada_acc": {
            "ours": 0.4,
            "paper": _row(spec, "mage-lambada", "ga")["values"]["all_test"],
        },
        "bigru_syn2_err": {"ours": 50.0},  # embedded default
        "bigru_wt2_err": {"ours": 50.0},  # no paper table
    }
    coref = {p.stem: json.loads(p.read_text()) for p in (root / "coref").glob("*.json")}
    assert coref == {
        f"{e}_f1": {"ours": 100 * f, "paper": _row(spec, "coref-conll2012", e)["values"]["avg_f1"]}
        for e, f in (("asl", 0.61), ("baseline", 0.60))
    }
    assert not stale.exists()  # nothing of another layout or an unmeasured figure is left
    assert {p.parent.name for p in root.rglob("*.json")} <= {"mage", "coref", "entitynlm",
                                                             "corelm"}  # fmt: skip
    figures = sorted(p.name for p in (tmp_path / "out" / "figures").glob("*.png"))
    # ours_vs_paper and the study figures draw the committed records (results/)
    assert figures == [
        "annotation_quality.png",
        "learning_curves_mage.png",
        "ours_vs_paper.png",
        "study_coref-quality.png",
    ]
    for name in figures:
        assert f"figures/{name})" in text  # embedded in the report
    before = {n: (tmp_path / "out" / "figures" / n).read_bytes() for n in figures}
    _build(tmp_path, metrics)
    assert before == {n: (tmp_path / "out" / "figures" / n).read_bytes() for n in figures}


def test_the_corpora_document_lengths_are_a_png_and_dvc_declares_only_png_plots(tmp_path, metrics):
    """Issue #55.4: `dvc plots show` offline in full. The stats stages' CSV plots needed
    Vega from a CDN and vanished offline; the report draws them (doc_lengths.png, a panel
    per corpus, not in the report's text) and dvc.yaml declares only PNG plots."""
    (tmp_path / "corpus_plots").mkdir()
    (tmp_path / "corpus_plots" / "a_doc_lengths.csv").write_text(
        "doc_tokens,documents\n0,3\n50,1\n"
    )
    (tmp_path / "corpus_plots" / "b_doc_lengths.csv").write_text("doc_tokens,documents\n50,6\n")
    text = _build(tmp_path, metrics)
    png = tmp_path / "out" / "figures" / "doc_lengths.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "doc_lengths" not in text
    before = png.read_bytes()
    _build(tmp_path, metrics)
    assert png.read_bytes() == before  # same bytes on a rerun
    dvc = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())
    declared = [next(iter(p)) if isinstance(p, dict) else p for p in dvc.get("plots", [])]
    for stage in dvc["stages"].values():
        for plot in (stage.get("do") or stage).get("plots", []):
            declared.append(next(iter(plot)) if isinstance(plot, dict) else plot)
    assert "plots/report/doc_lengths.png" in declared
    assert declared and all(p.endswith(".png") for p in declared), declared


# --------------------------------------------------------------------------- EntityNLM (#13)


def _entitynlm_metrics(tmp_path, metrics) -> dict:
    """train_entitynlm (the 5-gram item), rerank_entitynlm and entity_prediction metrics as
    those stages write them, in sibling directories as under metrics/."""
    root = tmp_path / "enlm"
    ppl = {"mean": 150.0, "std": 0.0, "n": 1}
    _write(root / "train_entitynlm" / "5gram.json",
           {"model": "5gram", "dataset": "synthetic-gold", "seeds": 1, "dev_ppl": ppl,
            "test_ppl": ppl, "tokens": {"test": 900}, "vocab_size": 300})  # fmt: skip
    scores = lambda f: {"conll_f1": f, "muc_p": 0.9, "muc_r": 0.8, "muc_f1": 0.85,  # noqa: E731
                        "bcub_p": 0.7, "bcub_r": 0.6, "bcub_f1": 0.65, "ceafe_p": 0.5,
                        "ceafe_r": 0.4, "ceafe_f1": 0.45}  # fmt: skip
    _write(root / "rerank_entitynlm" / "handmade.json",
           {"corpus": "handmade", "alpha": 0.35, "documents": {"dev": 3, "test": 4},
            "test": {"baseline": scores(0.60), "rerank_lm": scores(0.55),
                     "rerank_combined": scores(0.625)},
            "p_values": {"rerank_lm": 0.5, "rerank_combined": 0.25}, "trials": 100,
            "changed": {"rerank_lm": 3, "rerank_combined": 1}})  # fmt: skip
    acc = lambda a: {"test": {"accuracy": a, "n": 40, "correct": int(40 * a)}}  # noqa: E731
    _write(root / "entity_prediction" / "synthetic.json",
           {"corpus": "synthetic", "accuracy": {"always_new": acc(0.25), "shallow": acc(0.5),
                                                "entitynlm": acc(0.75)}})  # fmt: skip
    return {**metrics, "entitynlm": str(root / "train_entitynlm")}


def test_entitynlm_tables_2_and_3_beside_the_paper(tmp_path, metrics, spec):
    text = _build(tmp_path, _entitynlm_metrics(tmp_path, metrics))
    t2 = text.split("Table 2 — coreference reranking", 1)[1].split("\n## ", 1)[0]
    assert "<details><summary>Not measured" not in t2
    row = _line(t2, "| Rerank: EntityNLM + cort | `rerank_combined` |")
    assert row.startswith(
        "| Rerank: EntityNLM + cort | `rerank_combined` | 62.50 (64.04) | 90.00 (77.93)"
    )
    assert "alpha = 0.35 on dev" in t2 and "p = 0.5000 (LM alone), 0.2500 (mix)" in t2
    t3 = text.split("Table 3 — entity prediction", 1)[1].split("\n## ", 1)[0]
    assert "| EntityNLM | `entitynlm` | 75.00 (n=40) (74.23) |" in t3
    assert "| Modi et al. (2017) | — | — (62.65) |" in t3
    assert "Table 2 (coreference reranking)" not in text  # the generic dump is gone
    glance = text.split("## Smoke run on generated data: what this workspace's run measured", 1)[
        1
    ].split("\n## ", 1)[0]
    assert "| `rerank_combined` on handmade | test CoNLL F1 % | 62.50 | test" in glance
    assert "| `entitynlm` on synthetic | test accuracy % | 75.00 | test" in glance
    summary = {p.stem: json.loads(p.read_text())
               for p in (tmp_path / "out" / "summary" / "entitynlm").glob("*.json")}  # fmt: skip
    # EntityNLM's own figure per table; the baselines (5gram, cort, always_new, shallow) and
    # rerank_lm are in the report only
    assert summary == {"entitynlm_synthetic_acc": {"ours": 75.0, "paper": 74.23},
                       "rerank_handmade_f1": {"ours": 62.5, "paper": 64.04}}  # fmt: skip


def test_table3_has_the_human_row_the_rich_shallow_row_and_the_slot_set(tmp_path, metrics):
    """Issue #56.2-3: InScript's test sample scored on Modi et al.'s released targets: the
    human majority on Table 3's line 5, the rich shallow ranker as a row of ours after the
    paper's, and a line saying which test slots were scored and how the rule compares."""
    root = tmp_path / "enlm"

    def acc(a, n=211):
        return {"dev": {"accuracy": a - 0.01, "n": 1708},
                "test_sample": {"accuracy": a, "n": n, "correct": round(n * a)}}  # fmt: skip

    comparison = {
        "documents": 10,
        "released": 211,
        "unmatched": 0,
        "rule": 216,
        "rule_misses": 0,
        "rule_extra": 5,
    }
    _write(
        root / "entity_prediction" / "inscript.json",
        {
            "corpus": "inscript",
            "accuracy": {
                "always_new": acc(0.3555),
                "shallow": acc(0.4265),
                "shallow-rich": acc(0.5592),
                "human": {"test_sample": {"accuracy": 0.7678, "n": 211}},
            },
            "test_slots": {
                "set": "released",
                "file": "humanPredictions.sample.json",
                "comparison": comparison,
                "human": {"ties": 5, "unmapped": 10},
            },
        },
    )
    _write(root / "entity_prediction" / "synthetic.json",
           {"corpus": "synthetic", "accuracy": {"always_new": {"test": {"accuracy": 0.5, "n": 4}}},
            "test_slots": {"set": "rule", "why": "no release"}})  # fmt: skip
    text = _build(tmp_path, {**metrics, "entitynlm": str(root / "train_entitynlm")})
    t3 = text.split("Table 3 — entity prediction", 1)[1].split("\n## ", 1)[0]
    assert "| Human prediction | `human` | 76.78 (n=211, test_sample) (77.35) | — (77.35) |" in t3
    assert "| Baseline: shallow features | `shallow` | 42.65 (n=211, test_sample) (45.34) |" in t3
    rich = _line(t3, "| (ours) Shallow features, rich")
    assert rich.endswith("| `shallow-rich` | 55.92 (n=211, test_sample) (—) | — (—) |")
    assert (
        "`inscript` test slots: Modi et al.'s released targets (humanPredictions.sample.json: "
        "211 targets in 10 stories, 0 in no gold mention); the rule picks 216 there, "
        "missing 0 and adding 5. Human majority: 5 tied votes (first listed wins)."
    ) in t3
    assert (
        "`synthetic` test slots: the rule (tasks/evaluation/entity_prediction.py; no release)" in t3
    )
    glance = text.split("## Smoke run on generated data: what this workspace's run measured", 1)[
        1
    ].split("\n## ", 1)[0]
    assert "| `human` on inscript | test accuracy % | 76.78 | test" in glance
    assert "| `shallow-rich` on inscript | test accuracy % | 55.92 | test" in glance


def test_ours_rows_need_a_label_and_a_model(tmp_path):
    raw = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    table = next(t for t in raw["tables"] if t["id"] == "entitynlm-prediction")
    table["ours_rows"] = [{"label": "x"}]
    bad = tmp_path / "spec.yaml"
    bad.write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(DataError, match=r"ours_rows\[0\]: needs label and model"):
        report.load_spec(bad, SECTIONS)


def test_babi_dev_error_over_seeds_beside_the_paper(tmp_path, metrics, spec):
    """Issue #15.4: per task, the seeds' dev error as mean ± sd (the test cells are one pick
    on 10-question samples), with the mean over tasks, failed count and the budget."""
    per_seed = {"1": {"dev_acc": 0.9}, "2": {"dev_acc": 0.97}, "3": {"dev_acc": 1.0}}
    _put(metrics["mage"], _reader("ga", "qa1", "babi", 0.0, per_seed=per_seed, epochs_run=4))
    _put(metrics["mage"], _reader("ga", "qa2", "babi", 0.0, per_seed={"1": {"dev_acc": 0.5}},
                                  epochs_run=3))  # fmt: skip
    text = _build(tmp_path, metrics)
    section = text.split("Table 1, dev error over seeds (mean ± sd)", 1)[1].split("\n## ", 1)[0]
    ga = _row(spec, "mage-babi", "ga")["values"]
    # mean 4.3, population sd of (10, 3, 0) = 4.2; one seed: no sd
    assert f"4.3 ± 4.2 ({ga['qa1']:.1f})" in _line(section, "| 1 (`qa1`)")
    assert f"50.0 ({ga['qa2']:.1f})" in _line(section, "| 2 (`qa2`)")
    mean = f"{(100 * 0.13 / 3 + 50) / 2:.1f} ({(ga['qa1'] + ga['qa2']) / 2:.1f}) over 2"
    assert mean in _line(section, "| Mean over the tasks measured")
    paper_failed = sum(ga[t] > 5 for t in ("qa1", "qa2"))
    assert f"1 of 2 ({paper_failed})" in _line(section, "| Failed tasks (paper)")
    assert "Budget: seeds per run 3, epochs run 3–4." in section


def test_babi_failed_count_is_not_fooled_by_float_sums(tmp_path, metrics, spec):
    """A task whose seeds err 4, 5 and 6 % on dev averages exactly the 5 % threshold, which is
    not failed (the paper: failed = error above 5 %); summed in floats it is 5.000000000000001."""
    per_seed = {"1": {"dev_acc": 0.96}, "2": {"dev_acc": 0.95}, "3": {"dev_acc": 0.94}}
    assert 100 * sum(1 - v["dev_acc"] for v in per_seed.values()) / 3 > 5  # the float trap
    _put(metrics["mage"], _reader("ga", "qa13", "babi", 0.0, per_seed=per_seed, epochs_run=3))
    text = _build(tmp_path, metrics)
    section = text.split("Table 1, dev error over seeds (mean ± sd)", 1)[1].split("\n## ", 1)[0]
    assert "5.0 ± 0.8" in _line(section, "| 13 (`qa13`)")
    assert "0 of 1 (" in _line(section, "| Failed tasks (paper)")


def test_entitynlm_table_1_at_each_n_with_the_bounds_under_it(tmp_path, metrics, spec):
    """Issue #33.8: Table 1's EntityNLM cell at the headline N, a row per other N measured, and
    under the table the estimate per N against its two lower bounds, per corpus and over all."""
    paths = _entitynlm_metrics(tmp_path, metrics)
    stat = lambda m, s=0.0, n=3: {"mean": m, "std": s, "n": n}  # noqa: E731

    def bounds(docs, tokens, is10, is100, under10):
        return {"documents": docs, "tokens": tokens, "estimates": 3 * docs,
                "is_ppl": {"10": stat(is10, 0.5), "100": stat(is100, 0.25)},
                "under_bound": {"10": under10, "100": 0}, "best_draw_ppl": 200.0,
                "gold_joint_ppl": 180.0, "bound_ppl": 170.0}  # fmt: skip

    test = {"is_ppl": stat(130.0, 0.25), "is_samples": 100, "joint_ppl": 180.0,
            "is_grid": {"10": {"is_ppl": stat(141.0, 0.5)}, "100": {"is_ppl": stat(130.0, 0.25)}},
            "is_bounds": bounds(5, 9000, 141.0, 130.0, 4),
            "is_by_corpus": {"gum-gold": bounds(3, 3000, 120.0, 115.0, 1),
                             "litbank-gold": bounds(2, 6000, 152.0, 138.0, 3)}}  # fmt: skip
    _write(Path(paths["entitynlm"]) / "entitynlm.json",
           {"model": "entitynlm", "dataset": "gum-gold+litbank-gold", "seeds": 1,
            "dev_ppl": stat(128.0, n=1), "test_ppl": stat(130.0, n=1), "is_samples": 100,
            "dev_ppl_by_samples": {"10": stat(139.0, n=1), "100": stat(128.0, n=1)},
            "test_ppl_by_samples": {"10": stat(141.0, n=1), "100": stat(130.0, n=1)},
            "selected_seed": 1, "selected": {"test": test}, "vocab_size": 300,
            "tokens": {"test": 9000}, "epochs_run": 3})  # fmt: skip
    text = _build(tmp_path, paths)
    t1 = text.split("Table 1 — language modelling", 1)[1].split("\n## ", 1)[0]
    paper = _row(spec, "entitynlm-lm", "entitynlm")["values"]["test_ppl"]
    assert _line(t1, "| EntityNLM | `entitynlm` |").startswith(
        f"| EntityNLM | `entitynlm` | 130.00 ({paper:.2f}) | 128.00 | ± 0.25 over 3 sampling seeds"
    )
    assert _line(t1, "| EntityNLM, N = 10 |").startswith(
        "| EntityNLM, N = 10 | `entitynlm` | 141.00 (—) | 139.00 | ± 0.50 over 3 sampling seeds"
    )
    assert "| EntityNLM, N = 100 |" not in t1  # the headline row is N = 100
    assert "N = 100 draws per document; the paper's: 100" in t1
    assert "Table 1 keeps N = 100, the paper's (§5.1)" in t1
    assert "| corpus | documents | words / document | IS ppl, N = 10 | IS ppl, N = 100 |" in t1
    assert _line(t1, "| `litbank-gold` |") == (
        "| `litbank-gold` | 2 | 3000 | 152.00 ± 0.50 | 138.00 ± 0.25 | 200.00 | 180.00 | "
        "170.00 | 3, 0 of 6 |"
    )
    assert _line(t1, "| all |").startswith("| all | 5 | 1800 | 141.00 ± 0.50 |")


def test_entitynlm_table_1_under_each_reading_with_the_papers_beside_its_reading(
    tmp_path, metrics, spec
):
    """Issue #56.1: with the readings in the metrics, EntityNLM's row is the comparable
    reading (the paper's number beside it), the other readings follow (no paper number), the
    marginal keeps its figure, and the order EntityNLM < RNNLM < 5-gram is stated per reading."""
    paths = _entitynlm_metrics(tmp_path, metrics)  # the 5-gram at 150.00 ± 0
    stat = lambda m, s=0.0, n=3: {"mean": m, "std": s, "n": n}  # noqa: E731
    readings = {"marginal": {"dev_ppl": stat(128.0), "test_ppl": stat(146.0, 4.0)},
                "words_is": {"dev_ppl": stat(100.0), "test_ppl": stat(110.0, 3.0)},
                "words_q_mix": {"dev_ppl": stat(120.0), "test_ppl": stat(139.0, 2.0)},
                "words_q_mean": {"dev_ppl": stat(125.0), "test_ppl": stat(141.0, 2.0)},
                "words_gold": {"dev_ppl": stat(115.0), "test_ppl": stat(120.0, 1.0)}}  # fmt: skip
    test = {"is_ppl": stat(146.0, 0.25), "is_samples": 100,
            "readings": {"words_is": {"ppl": stat(110.0, 0.75)}}}  # fmt: skip
    _write(Path(paths["entitynlm"]) / "entitynlm.json",
           {"model": "entitynlm", "dataset": "gum-gold+litbank-gold", "seeds": 3,
            "dev_ppl": stat(128.0), "test_ppl": stat(146.0, 4.0), "is_samples": 100,
            "readings": readings, "selected_seed": 1, "selected": {"test": test},
            "vocab_size": 300, "tokens": {"test": 9000}, "epochs_run": 3})  # fmt: skip
    _write(Path(paths["entitynlm"]) / "rnnlm.json",
           {"model": "rnnlm", "dataset": "gum-gold+litbank-gold", "seeds": 3,
            "dev_ppl": stat(130.0), "test_ppl": stat(140.0, 1.0), "vocab_size": 300,
            "tokens": {"test": 9000}})  # fmt: skip
    text = _build(tmp_path, paths)
    t1 = text.split("Table 1 — language modelling", 1)[1].split("\n## ", 1)[0]
    paper = _row(spec, "entitynlm-lm", "entitynlm")["values"]["test_ppl"]
    assert _line(t1, "| EntityNLM | ").startswith(
        f"| EntityNLM | `entitynlm` `words_is` | 110.00 ± 3.00 ({paper:.2f}) | 100.00 | "
        "± 0.75 over 3 sampling seeds"
    )
    assert _line(t1, "| EntityNLM, (a) marginal").split(" | ")[1:5] == [
        "`entitynlm` `marginal`",
        "146.00 ± 4.00 (—)",
        "128.00",
        "± 0.25 over 3 sampling seeds",
    ]
    assert "| 120.00 ± 1.00 (—) | 115.00 | exact (gold R, E, L) |" in _line(t1, "| EntityNLM, (c)")
    assert "reading `words_is`, the one the paper's number is comparable to" in t1
    assert (
        _line(t1, "| `words_is` |")
        == "| `words_is` | yes, beyond the spread | yes, beyond the spread |"
    )
    assert (
        _line(t1, "| `words_q_mix` |")
        == "| `words_q_mix` | yes, within the spread | yes, beyond the spread |"
    )
    assert _line(t1, "| `marginal` |").startswith("| `marginal` | no |")


def test_the_preamble_names_the_numerics_of_a_native_run():
    """Issue #57.1: a report made on the host's fastest kernels (a preset, an experiment) says
    so in its provenance; the committed lock's portable report is unchanged."""
    from tasks.report.build import _preamble

    native = "\n".join(_preamble("synthetic-gold", {}, mode="native"))
    assert "Numerics of this workspace's run: `native` (params.yaml numerics)" in native
    assert "Numerics" not in "\n".join(_preamble("synthetic-gold", {}, mode="portable"))
