"""CoreLM's Tables 1-2 beside the paper's (tasks/report/corelm.py)."""

from __future__ import annotations

import json

from tasks.report import common, corelm


def _metrics(model: str, ppl: float, acc: float) -> dict:
    name = model
    out = {"model": model, "backbone": "tiny", "data": ["toy"], "mode": "paper",
           "heldout": {name: {"word_perplexity": ppl}},
           "lambada": {f"{name}/full_word": {"accuracy": acc, "perplexity": 9.0},
                       f"{name}/last_token": {"accuracy": acc + 0.1}},
           "training": {"steps": 3, "epochs": 1, "train_tokens_per_epoch": 10, "train_time_s": 1}}  # fmt: skip
    if model == "corelm":
        out["heldout"]["corelm+coref"] = {"word_perplexity": ppl - 1}
        out["heldout_split"] = "test"
    return out


def test_tables_put_measured_numbers_beside_the_paper(tmp_path):
    for model, ppl, acc, correct in [("zeroshot", 50.0, 0.2, [1, 0, 0, 1]),
                                     ("corelm", 40.0, 0.25, [1, 1, 0, 1])]:  # fmt: skip
        (tmp_path / f"{model}.json").write_text(json.dumps(_metrics(model, ppl, acc)))
        (tmp_path / model).mkdir()
        (tmp_path / model / "items.json").write_text(
            json.dumps({f"lambada/{model}/full_word": correct})
        )
    text = "\n".join(corelm.render(tmp_path, tmp_path))
    assert "| backbone zero-shot | 50.00 / 66.19 | 9.00 / 26.49 | — / 30.63 | — / 35.81 |" in text
    # §4: CoreLM is "evaluated on GUMBY, using the created entity representations": its
    # held-out cell is the with-entities figure; the no-entity one is stated below the table
    assert "| CoreLM | 39.00 / 46.97 |" in text
    assert "| CoreLM + coreference | — / — |" in text
    assert "held-out = the `test` split" in text
    assert "CoreLM on the held-out split without entities: 40.00" in text
    assert "| CoreLM | 25.00, 35.00 / 48.11 |" in text
    assert "CoreLM vs backbone zero-shot (LAMBADA full_word, n=4): t = 1.000" in text
    assert "Our backbone: `tiny`" in text


def test_measured_rows_feed_the_opening_table_and_summary(tmp_path):
    runs = {m: _metrics(m, ppl, acc) for m, ppl, acc in [("zeroshot", 50.0, 0.2),
                                                          ("corelm", 40.0, 0.25)]}  # fmt: skip
    rows = {(r.what, r.metric): r for r in corelm.measured([], runs)}
    lam = rows["`corelm` (tiny)", "LAMBADA acc % (full_word)"]
    assert lam.ours == 25.0 and lam.paper == 48.11 and lam.delta is None  # tiny is not GPT-2
    held = rows["`zeroshot` (tiny)", "held-out word ppl"]
    assert held.ours == 50.0 and held.paper == 66.19
    assert rows["`corelm` (tiny)", "LAMBADA acc % (last_token)"].ours == 35.0
    assert rows["`corelm` (tiny)", "held-out word ppl"].ours == 39.0  # with its entities
    # metrics/summary/corelm.json: held-out ppl and LAMBADA (full word) per model, short keys
    assert common.summary_metrics(list(rows.values())) == {
        "corelm_ppl": {"ours": 39.0, "paper": 46.97},
        "corelm_lambada_acc": {"ours": 25.0, "paper": 48.11},
        "zeroshot_ppl": {"ours": 50.0, "paper": 66.19},
        "zeroshot_lambada_acc": {"ours": 20.0, "paper": 46.67},
    }
    assert corelm.measured([], {}) == []


def _curve(model: str) -> dict:
    def point(step, ppl):
        p = {"step": step, "heldout_word_ppl": ppl}
        if model == "corelm":
            p.update(heldout_word_ppl_no_entities=ppl + 0.5, gate_sigmoid_mean=0.5,
                     entity_share_mean=0.75, entity_norm_share=0.7)  # fmt: skip
        return p

    start = 240.0 if model == "corelm" else 58.0
    points = [point(0, start), point(30, start - 10)]
    return {"every_steps": 30, "schedule_steps": 300, "heldout_docs": 10, "heldout_split": "test",
            "first_step_loss": 4.71 if model == "corelm" else 3.71,
            "initial": {k: v for k, v in points[0].items() if k != "step"}, "points": points}  # fmt: skip


def test_the_learning_curves_sit_side_by_side_and_only_when_recorded(tmp_path):
    runs = {m: _metrics(m, 50.0, 0.2) for m in ("ft", "corelm")}
    without = "\n".join(corelm.render_section(runs, corelm._paper()))
    assert "Learning curves" not in without
    for m in runs:
        runs[m]["curve"] = _curve(m)
    text = "\n".join(corelm.render_section(runs, corelm._paper()))
    assert "a point every 30 optimizer steps of 300" in text
    assert "| 0 | 58.00 | 240.00 | 240.50 | 0.50 | 0.75 | 0.70 |" in text
    assert "| 30 | 48.00 | 230.00 | 230.50 | 0.50 | 0.75 | 0.70 |" in text
    assert (
        "First training batch's loss: backbone FT 3.71, CoreLM 4.71 (CoreLM's initial entity share 0.75)"
        in text
    )
