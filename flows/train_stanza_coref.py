"""Stage `train_stanza_coref`: Stanza's coreference model trained by Stanza's own loop.

    python -m flows.train_stanza_coref

params.yaml train_stanza_coref names the corpora (data/docs/<corpus>/, converted to Stanza's
coreference JSON), the encoder (tiny | minilm | smollm2 | a local directory) and Stanza's
model and training settings. Writes artifacts/train_stanza_coref/model.pt (Stanza's checkpoint:
what `stanza.Pipeline(coref_model_path=...)` and the `stanza` annotator load) and
metrics/train_stanza_coref/metrics.json (dev/test CoNLL F1 with the project's scorer); one MLflow
run train_stanza_coref@<encoder>/seed<k> in the experiment train_stanza_coref
(models/stanza_coref/train.py).
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from models.stanza_coref import train as stage

train_model = task(stage.train_stage, name="train-stanza-coref", task_run_name="train_stanza_coref")


@flow(name="train-stanza-coref")
def train_stanza_coref() -> dict:
    return train_model(stage.settings())  # every setting checked before any work


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    run_cli(train_stanza_coref)


if __name__ == "__main__":
    main()
