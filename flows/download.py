"""Stage `download`: fetch (or generate) one corpus into data/raw/<corpus>/.

    python -m flows.download --corpus babi

Mirror first (download.mirror or COREFREPRO_MIRROR), then the network; every file is
sha256-checked. The whole directory appears only when every required file is there.
"""

from __future__ import annotations

import argparse
import logging

from flows.runtime import Runner, flow, run_cli, task
from tasks import corpora
from tasks.core import fetch, layout, storage
from tasks.core.config import mirror_setting, resolve_path
from tasks.corpora import ingest

log = logging.getLogger("corefrepro.download")

fetch_file = task(
    fetch.fetch_source,
    name="fetch-file",
    task_run_name="fetch@{corpus}/{source.relpath}",
    retries=3,
    retry_delay_seconds=5,
)


@task(name="generate-corpus", task_run_name="generate@{corpus}")
def generate_corpus(corpus: str, target_dir, cfg: dict) -> None:
    corpora.get(corpus).generate(target_dir, cfg)


@flow(
    name="download",
    runner=lambda corpus: Runner(
        "threads", int(ingest.download_settings(corpus)[0].get("workers", 4))
    ),
)
def download(corpus: str) -> dict[str, str]:
    shared, corpus_cfg = ingest.download_settings(corpus)
    module = corpora.get(corpus)
    target = layout.raw_dir(corpus)
    with storage.atomic_dir(target) as tmp:
        if hasattr(module, "generate"):
            generate_corpus(corpus, tmp, corpus_cfg)
        sources = module.sources(corpus_cfg)
        mirror = mirror_setting()
        log.info(
            "%s: %d files (mirror: %s, network: %s)",
            corpus,
            len(sources),
            mirror or "none",
            shared.get("network", True),
        )
        digests = fetch_file.map_kwargs(
            (
                {
                    "source": src,
                    "corpus": corpus,
                    "dest_dir": tmp,
                    "mirror": mirror,
                    "mirror_dir": module.MIRROR_DIR,
                    "network": bool(shared.get("network", True))
                    and (not src.optional or bool(shared.get("fetch_optional", True))),
                    "cache_dir": resolve_path(shared.get("cache_dir", "data/cache")),
                    "timeout": float(shared.get("timeout_s", 60)),
                }
                for src in sources
            ),
        )
        skipped = [src.relpath for src, d in zip(sources, digests, strict=True) if d is None]
        if skipped:
            log.info(
                "%s: %d optional files not available anywhere (e.g. %s); skipped",
                corpus,
                len(skipped),
                ", ".join(skipped[:3]),
            )
        sums = ingest.write_checksums(tmp)
    log.info("%s: %d files in %s", corpus, len(sums), target)
    return sums


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, choices=sorted(corpora.REGISTRY))
    args = parser.parse_args(argv)
    run_cli(download, args.corpus)


if __name__ == "__main__":
    main()
