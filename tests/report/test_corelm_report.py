"""CoreLM's Tables 1-2 beside the paper's (tasks/report/corelm.py)."""

from __future__ import annotations

import json

from tasks.report import corelm


def _metrics(model: str, ppl: float, acc: float) -> dict:
    name = model
    out = {"model": model, "backbone": "tiny", "data": ["toy"], "mode": "paper",
           "heldout": {name: {"word_perplexity": ppl}},
           "lambada": {f"{name}/full_word": {"accuracy": acc, "perplexity": 9.0},
                       f"{name}/last_token": {"accuracy": acc + 0.1}},
           "training": {"steps": 3, "epochs": 1, "train_tokens_per_epoch": 10, "train_time_s": 1}}  # fmt: skip
    if model == "corelm":
        out["heldout"]["corelm+coref"] = {"word_perplexity": ppl - 1}
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
    assert "| CoreLM + coreference | 39.00 / — |" in text
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
    assert corelm.measured([], {}) == []
