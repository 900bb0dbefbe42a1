"""Stage `lm_features`: frozen pretrained-LM word features of one corpus, computed once.

    python -m flows.lm_features --corpus gum

params.yaml lm_features names the encoder (tiny | smollm2 | a local Hugging Face folder, with
its layers, window and stride); data/docs/<corpus>/ is read and
data/features/<encoder>/<corpus>/features.safetensors + metrics/lm_features/<encoder>/<corpus>.json
are written. The coreference model reads them with train_coref.model.lm_features
(models/coref/features.py says how words, windows and layers are handled).
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from models.coref import features as stage

export_corpus = task(
    stage.export_corpus, name="lm-features-export", task_run_name="lm_features@{corpus}"
)


@flow(name="lm_features")
def lm_features(corpus: str) -> dict:
    return export_corpus(corpus)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", required=True, help="a corpus of data/docs/ (lm_features.corpora)"
    )
    run_cli(lm_features, parser.parse_args(argv).corpus)


if __name__ == "__main__":
    main()
