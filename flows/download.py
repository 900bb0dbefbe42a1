"""Stage `download`: fetch (or generate) one corpus into data/raw/<corpus>/.

    python -m flows.download --corpus babi

Mirror first (download.mirror or COREFREPRO_MIRROR), then the network; every file is
sha256-checked. The whole directory appears only when every required file is there.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from flows.runtime import Runner, flow, run_cli, task
from tasks import corpora
from tasks.core import fetch, layout, storage
from tasks.core.config import resolve_path
from tasks.core.errors import MissingSourceError
from tasks.core.fetch import mirror_setting
from tasks.corpora import ingest

log = logging.getLogger("corefrepro.download")

# retried only where a retry may help (fetch.retryable): a checksum mismatch or an absent
# file fails at once
fetch_file = task(
    fetch.fetch_source,
    name="fetch-file",
    retries=3,
    retry_delay_seconds=5,
    retry_if=fetch.retryable,
    task_run_name="fetch@{corpus}/{source.relpath}",
)


def usable_mirror(
    corpus: str, mirror: str | None, mirror_dir: str, network: bool, required: bool
) -> str | None:
    """The mirror, or None when it is a directory without this corpus's folder: said once
    here (not once per file), and an error at once when the network is off too and some
    file is required."""
    if not mirror or "://" in mirror or (Path(mirror) / mirror_dir).is_dir():
        return mirror
    where = Path(mirror) / mirror_dir
    absent = "does not exist" if not Path(mirror).is_dir() else f"has no {mirror_dir}/"
    if not network and required:
        raise MissingSourceError(
            f"{corpus}: mirror {mirror} {absent} ({where}) and download.network is off; set "
            "download.mirror or COREFREPRO_MIRROR to a directory holding "
            f"{mirror_dir}/ (e.g. ../shared/data), or enable the network"
        )
    log.warning("%s: mirror %s %s (%s); not consulted", corpus, mirror, absent, where)
    return None


@task(name="generate-corpus", task_run_name="generate@{corpus}")
def generate_corpus(corpus: str, target_dir, cfg: dict) -> None:
    corpora.get(corpus).generate(target_dir, cfg)


@flow(
    name="download",
    runner=lambda corpus: Runner("threads", ingest.download_settings(corpus)[0].workers),
)
def download(corpus: str) -> dict[str, str]:
    shared, corpus_cfg = ingest.download_settings(corpus)
    module = corpora.get(corpus)
    target = layout.raw_dir(corpus)
    with storage.atomic_dir(target) as tmp:
        if hasattr(module, "generate"):
            generate_corpus(corpus, tmp, corpus_cfg)
        sources = module.sources(corpus_cfg)
        network = shared.network
        required = any(not src.optional for src in sources)
        mirror = mirror_setting()
        if sources:
            mirror = usable_mirror(corpus, mirror, module.MIRROR_DIR, network, required)
        log.info(
            "%s: %d files (mirror: %s, network: %s)",
            corpus,
            len(sources),
            mirror or "none",
            shared.network,
        )
        fetch.allow_transfers()
        try:
            digests = fetch_file.map_kwargs(
                (
                    {
                        "source": src,
                        "corpus": corpus,
                        "dest_dir": tmp,
                        "mirror": mirror,
                        "mirror_dir": module.MIRROR_DIR,
                        "network": shared.network and (not src.optional or shared.fetch_optional),
                        "cache_dir": resolve_path(shared.cache_dir),
                        "timeout": shared.timeout_s,
                    }
                    for src in sources
                ),
                on_abort=fetch.stop_transfers,  # Ctrl-C: the transfers stop, their .part kept
            )
        finally:  # the stop ends this map's transfers only, never a later download's
            fetch.allow_transfers()
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
