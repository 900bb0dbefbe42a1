"""The one pyarrow schema module: every Parquet table of the pipeline is declared here.

Readers, annotators and models exchange data only through these tables, so a change of
annotator or corpus reaches every model family the same way.
"""

from __future__ import annotations

import pyarrow as pa

# Table kinds a normalized corpus may have (data/docs/<corpus>/<kind>.parquet).
DOCUMENTS = "documents"
ITEMS = "items"
MENTIONS = "mentions"
# Produced by the annotation and graph stages (data/mentions/..., data/graphs/...).
QUERY_MENTIONS = "query_mentions"
GRAPHS = "graphs"
ENTITYNLM_VIEW = "entitynlm_view"
CORELM_VIEW = "corelm_view"
# k-best antecedent trees of the coreference model (EntityNLM reranking, Ji et al. 2017 §5.2)
KBEST = "kbest"
# per-slot answers of the entity prediction stage (Ji et al. 2017 §5.3)
ENTITY_PREDICTIONS = "entity_predictions"

SPLITS = ("train", "dev", "test")

# One row per document (story, passage, book chapter, CoNLL document ...).
DOCUMENTS_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("tokens", pa.list_(pa.string()), nullable=False),
        # index of the first token of every sentence; sentence_starts[0] == 0
        pa.field("sentence_starts", pa.list_(pa.int32()), nullable=False),
        pa.field("genre", pa.string()),
        # one speaker per token where the corpus has them (CoNLL-2012), else null
        pa.field("speakers", pa.list_(pa.string())),
    ],
    metadata={"table": DOCUMENTS},
)

# One row per question / cloze item. The context is a prefix of a document of the same
# corpus (doc_id, first context_end tokens), so annotation and graphs are computed once per
# document and shared by all items over it (bAbI asks several questions per story).
ITEMS_SCHEMA = pa.schema(
    [
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("task", pa.string(), nullable=False),
        pa.field("context_end", pa.int32(), nullable=False),
        pa.field("query", pa.list_(pa.string()), nullable=False),
        pa.field("answer", pa.string(), nullable=False),
        pa.field("candidates", pa.list_(pa.string())),
        # indices of the supporting sentences in the document (bAbI), else null
        pa.field("supporting", pa.list_(pa.int32())),
    ],
    metadata={"table": ITEMS},
)

# One row per mention: token span [start, end) of a document, cluster id unique within the
# document, and who produced it (gold, entity-id, stanza, model, ...).
MENTIONS_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("start", pa.int32(), nullable=False),
        pa.field("end", pa.int32(), nullable=False),
        pa.field("cluster", pa.int32(), nullable=False),
        pa.field("annotator", pa.string(), nullable=False),
    ],
    metadata={"table": MENTIONS},
)

# Mentions inside an item's query (bAbI question, CNN/CBT query), in the cluster space of
# the item's document so query tokens can link to context chains. Spans index query tokens.
QUERY_MENTIONS_SCHEMA = pa.schema(
    [
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("start", pa.int32(), nullable=False),
        pa.field("end", pa.int32(), nullable=False),
        pa.field("cluster", pa.int32(), nullable=False),
        pa.field("annotator", pa.string(), nullable=False),
    ],
    metadata={"table": QUERY_MENTIONS},
)

# One row per graph: a document (corpora without items) or an item (its context prefix and
# its query, concatenated in one seeded random permutation; MAGE Dhingra et al. §3.3).
# Edges are typed; inverse edges make the graph cyclic, and splitting by direction gives a
# forward and a backward DAG (§3.1). Where each node has at most one incoming edge per type
# (sequence, coreference) a DAG is a set of chains, stored chain-decomposed: for every edge
# type, the index of each token's predecessor (-1 = none) -- what a batched MAGE-GRU reads
# (Eq. 4). Edge type names are in the table metadata (forward_edge_types,
# backward_edge_types), in the order of the outer lists.
GRAPHS_SCHEMA = pa.schema(
    [
        pa.field("graph_id", pa.string(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("item_id", pa.string()),
        pa.field("split", pa.string(), nullable=False),
        pa.field("tokens", pa.list_(pa.string()), nullable=False),
        # names of the concatenated sequences in order, e.g. ["query", "context"]
        pa.field("segments", pa.list_(pa.string()), nullable=False),
        pa.field("segment_starts", pa.list_(pa.int32()), nullable=False),
        # coreference chain of each token (-1 = none): MAGE's "one-hot" baseline features
        pa.field("chain", pa.list_(pa.int32()), nullable=False),
        pa.field("forward", pa.list_(pa.list_(pa.int32())), nullable=False),
        pa.field("backward", pa.list_(pa.list_(pa.int32())), nullable=False),
        # copied from the item so a reader needs only this table (null for documents)
        pa.field("task", pa.string()),
        pa.field("answer", pa.string()),
        pa.field("candidates", pa.list_(pa.string())),
    ],
    metadata={"table": GRAPHS},
)

# EntityNLM's latent variables per token (Ji et al. 2017, §2): R_t (token starts or continues
# an entity mention), E_t (entity index, 0-based in order of first mention, -1 = none) and
# L_t (remaining mention length including this token; 0 outside mentions, where the paper
# writes L = 1). Mentions longer than l_max are truncated to l_max tokens (or skipped).
ENTITYNLM_VIEW_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("tokens", pa.list_(pa.string()), nullable=False),
        pa.field("sentence_starts", pa.list_(pa.int32()), nullable=False),
        pa.field("is_mention", pa.list_(pa.bool_()), nullable=False),
        pa.field("entity", pa.list_(pa.int32()), nullable=False),
        pa.field("remaining", pa.list_(pa.int32()), nullable=False),
        pa.field("num_entities", pa.int32(), nullable=False),
    ],
    metadata={"table": ENTITYNLM_VIEW},
)

# CoreLM's entity-id stream (Stylianou & Vlahavas §4.1): one row per (document, nesting
# layer); layer 0 holds the outermost mentions, deeper layers the mentions nested in them.
CORELM_VIEW_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("layer", pa.int32(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("entity_ids", pa.list_(pa.int32()), nullable=False),
    ],
    metadata={"table": CORELM_VIEW},
)

# One row per (document, rank): the k best antecedent trees, deduplicated by the clusters
# they induce and padded to k (Ji et al. 2017 §5.2).
KBEST_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("rank", pa.int32(), nullable=False),  # 0 = the system's best tree
        pa.field("score", pa.float64(), nullable=False),  # sum of the tree's edge scores
        pa.field("padded", pa.bool_(), nullable=False),  # a copy of the last distinct tree
        # the tree's chains: mentions (start, end exclusive) with a cluster id dense per tree
        pa.field(
            "mentions",
            pa.list_(
                pa.struct(
                    [
                        pa.field("start", pa.int32(), nullable=False),
                        pa.field("end", pa.int32(), nullable=False),
                        pa.field("cluster", pa.int32(), nullable=False),
                    ]
                )
            ),
            nullable=False,
        ),
    ],
    metadata={"table": KBEST},
)

# One row per (predictor, entity-prediction slot): tasks/evaluation/entity_prediction.py. The
# slot is the mention [start, end) of doc_id; gold / prediction are cluster ids, -1 = new.
ENTITY_PREDICTIONS_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("start", pa.int32(), nullable=False),
        pa.field("end", pa.int32(), nullable=False),
        pa.field("predictor", pa.string(), nullable=False),
        pa.field("prediction", pa.int32(), nullable=False),
        pa.field("gold", pa.int32(), nullable=False),
        pa.field("n_candidates", pa.int32(), nullable=False),
    ],
    metadata={"table": ENTITY_PREDICTIONS},
)

SCHEMAS: dict[str, pa.Schema] = {
    DOCUMENTS: DOCUMENTS_SCHEMA,
    ITEMS: ITEMS_SCHEMA,
    MENTIONS: MENTIONS_SCHEMA,
    QUERY_MENTIONS: QUERY_MENTIONS_SCHEMA,
    GRAPHS: GRAPHS_SCHEMA,
    ENTITYNLM_VIEW: ENTITYNLM_VIEW_SCHEMA,
    CORELM_VIEW: CORELM_VIEW_SCHEMA,
    KBEST: KBEST_SCHEMA,
    ENTITY_PREDICTIONS: ENTITY_PREDICTIONS_SCHEMA,
}


# ---- results records (results/<preset>/<stage>/<item>.json, issue #55.1) ----
# One finished real-data measurement: the figures per seed with their spread, and what made
# them (data digests, settings, commit, numerics, host, MLflow runs). Written by
# `python -m tasks.results.record` from finished runs, never by hand; read by the report.
RECORD_VERSION = 1
RECORD_SOURCES = ("run", "transcribed, no run")
RECORD_FIELDS = {  # field -> its JSON type(s); every field required
    "version": int, "id": str, "paper": str, "table": str, "row": str, "source": str,
    "stage": str, "item": str, "preset": (str, type(None)), "scale": (str, type(None)),
    "overrides": list, "metrics": dict, "data": dict, "commit": str, "numerics": str,
    "device": str, "cpu": str, "epochs": dict, "wall_time_s": dict, "mlflow_run_ids": dict,
    "recorded_at": str,
}  # fmt: skip
RECORD_METRIC_FIELDS = {"per_seed": dict, "mean": (float, int, type(None)),
                        "sd": (float, int, type(None)), "n": int, "split": str,
                        "split_size": (int, type(None)), "unit": str, "better": str}  # fmt: skip
# Optional fields: a record written before one existed stays valid. curve: seed -> its learning
# curve as the stage wrote it (train_corelm's eval.curve_docs: {points: [{step, ...}], ...})
RECORD_OPTIONAL_FIELDS = {"curve": dict}


def record_problems(record: object) -> list[str]:
    """What makes `record` no valid results record (empty: valid)."""
    if not isinstance(record, dict):
        return ["a record is a JSON object"]
    known = {**RECORD_FIELDS, **RECORD_OPTIONAL_FIELDS}
    problems = [f"missing field {k!r}" for k in RECORD_FIELDS if k not in record]
    problems += [f"unknown field {k!r}" for k in record if k not in known]
    for key, kind in known.items():
        if key in record and not isinstance(record[key], kind):
            problems.append(f"{key}: {type(record[key]).__name__}, expected {kind}")
    if record.get("source") not in RECORD_SOURCES:
        problems.append(f"source: {record.get('source')!r}, expected one of {RECORD_SOURCES}")
    for name, metric in (record.get("metrics") or {}).items():
        if not isinstance(metric, dict):
            problems.append(f"metrics.{name}: not an object")
            continue
        for key, kind in RECORD_METRIC_FIELDS.items():
            if key not in metric:
                problems.append(f"metrics.{name}: missing {key!r}")
            elif not isinstance(metric[key], kind):
                problems.append(f"metrics.{name}.{key}: {type(metric[key]).__name__}")
        if metric.get("better") not in ("lower", "higher"):
            problems.append(f"metrics.{name}.better: expected 'lower' or 'higher'")
    curves = record.get("curve")
    for seed, curve in curves.items() if isinstance(curves, dict) else ():
        if not str(seed).isdigit():
            problems.append(f"curve.{seed}: a seed is a number")
        problems += curve_problems(curve, f"curve.{seed}")
    return problems


def curve_problems(curve: object, where: str = "curve") -> list[str]:
    """What makes one seed's learning curve unfit for a record (empty: fit): its points are
    what a reader plots, each at its optimizer step; the rest is kept as the stage wrote it."""
    points = curve.get("points") if isinstance(curve, dict) else None
    if not isinstance(points, list) or not points:
        return [f"{where}: expected an object with a non-empty list `points`"]
    return [f"{where}.points[{i}]: expected an object with an integer `step`"
            for i, point in enumerate(points)
            if not isinstance(point, dict) or type(point.get("step")) is not int]  # fmt: skip
