"""The project's language models as an lm-evaluation-harness model, "corefrepro" (issue #28):
any harness task that scores likelihoods (loglikelihood, multiple_choice,
loglikelihood_rolling) runs on any LM `models.registry.language_model` builds, a CoreLM
checkpoint train_corelm saved included:

    python -m models.harness --model corefrepro \\
        --model_args checkpoint=artifacts/train_corelm/corelm --tasks lambada_openai --device cpu

Why a module and not `lm_eval --model corefrepro`: lm-evaluation-harness 0.4.13 knows only
the models of its own table (lm_eval/models/__init__.py MODEL_MAPPING) and of its registry,
which nothing fills from outside -- no entry points, no plugin option. So `main` registers the
model, then hands the same arguments to lm_eval's own command line (`lm_eval.__main__`).
From Python: `import models.harness`, then `lm_eval.simple_evaluate(model="corefrepro",
model_args=...)`.

model_args: `lm=<name>` (models.registry.LANGUAGE_MODELS; default corelm); every other key
goes to that model's factory (corelm: checkpoint=<artifact folder or its best.pt>,
entity_mode, max_length, stride, ...). The harness's --batch_size and --device reach the
factory where it takes them: batch size "auto" leaves the factory's default; a CUDA device on a
machine without one is the CPU (as the harness's hf model does). generate_until is not
supported: the project's LMs score text, they do not generate it.

No coreference at test time: harness tasks carry no entity annotations, so CoreLM is scored
with every token on the static entity vector (App. A's zero-shot use of the gating layer) --
the report's "corelm" cell, never "corelm+coref".
"""

from __future__ import annotations

import inspect
import logging
import sys
from collections.abc import Sequence

from models.registry import LANGUAGE_MODELS, language_model
from tasks.core.errors import CorefreproError
from tasks.core.layout import check_checkpoint_path
from tasks.evaluation.lm import lm_factory

try:
    from lm_eval.api.model import LM
except ImportError as exc:  # a development dependency (pyproject [dependency-groups] dev)
    raise CorefreproError(
        "lm-evaluation-harness is not installed: `uv sync` (the dev group) or "
        "`pip install lm-eval==0.4.13`"
    ) from exc

log = logging.getLogger("corefrepro.harness")

NAME = "corefrepro"
RUNTIME = ("batch_size", "device")  # the harness's own arguments a factory may take


class HarnessError(CorefreproError):
    """A harness request or setting the project's LMs cannot serve (says which and why)."""


class HarnessLM(LM):
    """lm-evaluation-harness's `LM` over the project's `LanguageModel` contract
    (tasks/evaluation/lm.py), whose semantics are the harness's: requests go through unchanged
    and in one call, so the model batches and sorts them itself."""

    def __init__(self, lm: str = "corelm", batch_size: int | str | None = None,
                 max_batch_size: int | None = None, device: str | None = None,
                 **options: object):  # fmt: skip
        super().__init__()
        del max_batch_size  # only for batch size "auto", which the factory's default replaces
        runtime = {"batch_size": _batch_size(batch_size), "device": _device(device)}
        for key, value in runtime.items():
            if value is not None and key not in options and _takes(lm, key):
                options[key] = value
        if options.get("checkpoint") is not None:  # loaded as code: the one rule (layout.py)
            check_checkpoint_path(str(options["checkpoint"]), "model_args checkpoint")
        self.lm = language_model(lm, **options)

    def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        pairs = [_arguments(r, 2) for r in requests]
        results = [(float(ll), bool(greedy)) for ll, greedy in self.lm.loglikelihood(pairs)]
        for request, result in zip(requests, results, strict=True):
            self.cache_hook.add_partial("loglikelihood", request.args, result)
        return results

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:
        texts = [_arguments(r, 1)[0] for r in requests]
        results = [float(s.loglikelihood) for s in self.lm.loglikelihood_rolling(texts)]
        for request, result in zip(requests, results, strict=True):
            self.cache_hook.add_partial("loglikelihood_rolling", request.args, result)
        return results

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        task = getattr(requests[0], "task_name", None) if requests else None
        raise HarnessError(
            f"{NAME} ({self.lm.name}): generate_until (task {task}) is not supported: the "
            "project's language models score text, they do not generate it; run tasks whose "
            "output_type is loglikelihood, multiple_choice or loglikelihood_rolling"
        )


def _arguments(request: object, n: int) -> tuple[str, ...]:
    """A request's arguments (`Instance.args`): n strings, else an error naming the request."""
    args = getattr(request, "args", request)
    if not (isinstance(args, tuple) and len(args) == n and all(isinstance(a, str) for a in args)):
        task, doc = getattr(request, "task_name", None), getattr(request, "doc_id", None)
        raise HarnessError(
            f"{NAME}: a request (task {task}, doc {doc}) has arguments {_shape(args)}, not "
            f"{n} string(s) (images, audio and other extra arguments are not supported)"
        )
    return args


def _shape(args: object) -> str:
    if isinstance(args, tuple):
        return "(" + ", ".join(type(a).__name__ for a in args) + ")"
    return type(args).__name__


def _batch_size(value: object) -> int | None:
    """The harness's --batch_size as an int; None for "auto" (the factory's default)."""
    if value is None or (isinstance(value, str) and value.startswith("auto")):
        return None
    try:
        size = int(value)
    except (TypeError, ValueError):
        size = 0
    if size < 1:
        raise HarnessError(f"{NAME}: batch_size {value!r} is not a positive integer or auto")
    return size


def _device(value: str | None) -> str | None:
    """The harness's --device; a CUDA device where there is none is the CPU (its default is
    cuda:0, and its hf model falls back the same way)."""
    if value is None or not str(value).startswith("cuda"):
        return value
    import torch

    if torch.cuda.is_available():
        return value
    log.warning("%s: device %s requested but CUDA is not available; using the CPU", NAME, value)
    return "cpu"


def _takes(name: str, key: str) -> bool:
    """Whether the factory registered as *name* takes the keyword *key* (or any keyword)."""
    if name in LANGUAGE_MODELS:
        LANGUAGE_MODELS[name]  # its module registers it
    factory = lm_factory(name)
    if factory is None:
        return False  # language_model then says the name is unknown
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == key or p.kind is p.VAR_KEYWORD for p in params)


def register() -> None:
    """Make "corefrepro" known to lm_eval, by module path (idempotent, and the same class when
    this file runs as __main__). The harness's own models are registered first: its
    `get_model` loads them only into an empty registry."""
    import lm_eval.models  # noqa: F401
    from lm_eval.api.registry import model_registry

    if NAME not in model_registry:
        model_registry.register(NAME, target="models.harness:HarnessLM")


def main(argv: Sequence[str] | None = None) -> None:
    """lm_eval's command line (the same arguments as `lm_eval`) with "corefrepro" registered;
    a pipeline error ends it with one line."""
    from lm_eval.__main__ import cli_evaluate

    register()
    saved = sys.argv
    if argv is not None:
        sys.argv = [saved[0] if saved else "lm_eval", *argv]  # lm_eval parses sys.argv
    try:
        cli_evaluate()
    except CorefreproError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        sys.argv = saved


register()

if __name__ == "__main__":
    main()
