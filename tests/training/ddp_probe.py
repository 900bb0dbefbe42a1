"""Train one family's small test model through `fit`, alone or as one of torchrun's processes,
and record what tests/training/test_distributed.py compares: every training batch's loss by
(epoch, position in the epoch's global order) and the final weights.

    python tests/training/ddp_probe.py FAMILY OUT                       # one process
    python -m torch.distributed.run --nproc-per-node 2 tests/training/ddp_probe.py FAMILY OUT

Dropout and EntityNLM's Eq. 7 prior noise are off: the processes draw their own random
numbers (tasks/training/distributed.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tasks.training import distributed  # noqa: E402
from tasks.training.loop import fit  # noqa: E402

# PROBE_DEVICE=cuda: each process on cuda:LOCAL_RANK, NCCL (issue #29.8, .ci/gpu-check)
SETTINGS = {"epochs": 2, "accumulate": 2, "device": os.environ.get("PROBE_DEVICE", "cpu"),
            "threads": 1, "log_every_s": 0}  # fmt: skip


def _coref():
    from models.coref import train as tr
    from models.coref.data import build_vocab
    from tests.models.coref.test_bench_stacked import document

    docs = [document(random.Random(0), i) for i in range(6)]
    sizes = {"embedding_dim": 16, "char_filters": 4, "lstm_size": 16, "ffnn_size": 16,
             "feature_size": 4, "asl_mlp_size": 8, "dropout": 0.0, "lexical_dropout": 0.0}  # fmt: skip
    mcfg = tr.resolve_model({**sizes, "encoder": "lsl"})
    tcfg = tr.resolve_train_cfg({**SETTINGS, "resume": False, "max_sentences": 6})
    splits = {"train": docs[:5], "dev": docs[5:], "test": []}
    return tr.CorefRecipe(splits, mcfg, tcfg, build_vocab(docs), None), tcfg


def _mage(work: Path):
    from models.mage import train as tr
    from models.mage.data import load_reader_data
    from tests.models.mage.test_data import build_synthetic_graphs

    graphs = work.parent / "graphs" / "graphs.parquet"  # built by the one-process run, which
    if not graphs.exists():  # goes first: under torchrun only RANK 0's writes land
        build_synthetic_graphs(graphs.parent)
    data = load_reader_data(graphs, "syn1")
    data.splits["train"], data.splits["dev"] = data.splits["train"][:40], data.splits["dev"][:8]
    mcfg = {"hidden_size": 16, "embed_dim": 8, "coref_size": 4, "reader": "ga",
            "encoder": "mage", "dropout": 0.0}  # fmt: skip
    tcfg = tr.resolve_train_cfg({**SETTINGS, "batch_size": 4})
    return tr.ReaderRecipe(data, mcfg, tcfg, graphs), tcfg


def _entitynlm():
    from models.entitynlm import train as tr
    from models.entitynlm.data import Vocab
    from tests.models.entitynlm.test_stage import _splits

    splits = _splits()
    mcfg = tr.ModelSettings(embed_dim=8, hidden_size=8, l_max=3, min_count=1, dropout=0.0)
    tcfg = tr.TrainSettings(**SETTINGS, batch_tokens=16)
    recipe = tr.LMRecipe("entitynlm", splits, Vocab.build(splits["train"]), mcfg, tcfg)
    for module in recipe.model.modules():  # Eq. 7's prior noise: a random draw, as dropout
        if hasattr(getattr(module, "config", None), "prior_sigma"):
            module.config = dataclasses.replace(module.config, prior_sigma=0.0)
    return recipe, tcfg


def _corelm(work: Path):
    import flows.train_corelm as stage
    from models.corelm import train as tr
    from tasks.core import config
    from tasks.core.settings import parse_settings
    from tests.models.corelm.test_train import _corpus

    config.REPO_ROOT = work / f"repo{distributed.current().rank}"  # data/docs/<corpus> there
    cfg = parse_settings(stage.TrainCoreLMSettings, {
        "backbone": "tiny", "data": [_corpus(config.REPO_ROOT)],
        "tiny": {"vocab_size": 300, "n_layer": 1, "n_head": 2, "n_embd": 32, "n_positions": 64},
        "gating": {"n_heads": 2, "dropout": 0.0},
        "train": {**SETTINGS, "batch_size": 2, "block_size": 32, "lr": 3e-3, "warmup_steps": 2},
    }, "probe")  # fmt: skip
    backbone = stage.backbone_of(cfg)
    data = tr.load_data(stage.data_sources(cfg.data), backbone.tokenizer)
    torch.manual_seed(1)
    model = tr.build_model(backbone, cfg.gating, cfg.train.seed, "corelm", data.n_entities)
    for module in model.modules():  # the tiny GPT-2's own dropout (resid, attention, embd)
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return tr.CoreLMRecipe(model, data, backbone, cfg.train, work / "out"), cfg.train


def build(family: str, work: Path):
    torch.manual_seed(1)
    families = {"coref": _coref, "entitynlm": _entitynlm, "mage": lambda: _mage(work),
                "corelm": lambda: _corelm(work)}  # fmt: skip
    return families[family]()


def record_steps(recipe) -> list[list]:
    """(epoch, position, loss) of every batch this process computes."""
    seen: list[list] = []
    where = {"epoch": 0, "position": -1}
    batches, step = recipe.batches, recipe.step

    def numbered(epoch):
        where["epoch"] = epoch
        for position, batch in enumerate(batches(epoch)):
            where["position"] = position
            yield batch

    def recorded(batch, device):
        out = step(batch, device)
        seen.append([where["epoch"], where["position"], float(out.loss)])
        return out

    recipe.batches, recipe.step = numbered, recorded
    return seen


def main(family: str, out: Path) -> None:
    ranks = distributed.current()
    recipe, settings = build(family, out)
    settings = dataclasses.replace(settings, nproc=ranks.world)
    steps = record_steps(recipe)
    fit(recipe, settings, out / "run", name=f"{family} rank {ranks.rank}")
    (out / f"steps{ranks.rank}.json").write_text(json.dumps(steps))
    if ranks.main:
        torch.save(recipe.model.state_dict(), out / "weights.pt")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
