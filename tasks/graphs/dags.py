"""MAGE graphs: sequences + typed edges -> forward/backward DAGs -> chain-decomposed arrays.

Dhingra, Yang, Cohen & Salakhutdinov, "Linguistic Knowledge as Memory for Recurrent Neural
Networks" (papers/004):

- §3.1: the tokens x_1..x_T plus typed edges E_0 = {(x, x', e)}; every edge gets an inverse
  (x', x, e') and the resulting cyclic graph splits by direction into a forward DAG (edges
  i < j) and a backward DAG (edges i > j), each topologically ordered by the sequence itself.
- §3.2, Eq. 4: where every node has at most one incoming edge of each type, a DAG is a set
  of chains and MAGE-GRU is a plain GRU whose recurrent input g_t stacks, per edge type, the
  state of the one predecessor. We store exactly that: for every edge type, each token's
  predecessor index (-1 = none). A second incoming edge of one type is an error (or, with
  on_conflict="nearest", the nearer source is kept and the drop is counted).
- §3.3: several sequences (context, query) are concatenated in ONE random order per item
  and decomposed as one long sequence; sequential edges run across the junction and
  coreference edges link mentions across sequences through the shared cluster space.

Coreference edge definition. Consecutive mentions m, m' of one chain (in the order of the
concatenated sequence) are linked from the LAST token of m to the FIRST token of m'. This is
how the authors' released code builds its graphs: bdhingra/coref-gru (Dhingra et al.,
NAACL 2018, whose CorefGRU layer cites this paper), utils/MiniBatchLoader.py,
MiniBatchLoaderMention.next(): ``edges_in[.., mentions[item[2]][0], chain] = 1`` (edge enters
at the first token of the next mention) and ``edges_out[.., mentions[item[0]][1]-1, chain] =
1`` (edge leaves at the last token of the previous mention, spans end-exclusive). Tokens inside
a mention are linked only sequentially. Two mentions of one chain that overlap (nested or
crossing) give no forward edge (last token of the first >= first token of the second); such
pairs are skipped and counted.

Placement (graphs.coref_placement, issue #15.3) -- an ablation the paper does not have:
"paper" is the placement above; "sentence" anchors each edge at the sentences around the
mentions instead: in the forward DAG the edge leaves from the last token of the sentence of
the previous mention (and enters the next mention at its first token), in the backward DAG it
leaves from the first token of the sentence of the next mention (and enters the previous
mention at its last token). Sentences end at . ? ! and at segment boundaries; two mentions in
one sentence keep the paper's edge (counted: coref_same_sentence_pairs). The released code has
no bAbI graphs: its master branch (WikiHop) builds the mention edges above; its LAMBADA-era
loader (utils/MiniBatchLoader.py at commit 1dbe71d) reads precomputed token triples from
.coref_onehot files whose construction is not released.

Segment order (graphs.order): "random" is §3.3's one random permutation per
item; "document_query" is what the released code does -- bdhingra/coref-gru (lambada branch)
model/GA.py, Model.__init__: the forward CorefGRU reads the document, then the query with
``mem_init=dmem[:,-1,:,:]`` (the document's chain memory carried into the query), and the
backward one reads the query, then the document -- i.e. the one concatenation [context, query]
decomposed both ways; "query_document" is the reverse. Fixed orders are an ablation beside the
paper's, written as their own graph run (tasks/graphs/runs.py graph_run).

Mention span (graphs.mention_span): "annotated" keeps the annotation's spans, whose noun
phrases include the determiner ("the kitchen", tasks/annotation/annotators/entity_id.py);
"no_determiner" drops a leading "the"/"a"/"an" from every mention longer than one token, so a
coreference edge enters the chain's next mention at its noun and the one-hot chain feature
marks the noun only. The paper does not say which span its bAbI links use ("we connect
consecutive mentions of the same entity", §4.2); an ablation, like the two above.

Corrupted coreference (Corruption, issue #58.5) -- beyond the papers: a seeded share of the
coreference links of each concatenated sequence is dropped (the later mention starts a chain of
its own) or rewired (it joins another chain seen before it), to measure how much a reader's gain
owes to the quality of its coreference. A link is a pair of consecutive mentions of one chain.

Edge types live in a registry (EDGE_TYPES); a type builds its original edges E_0 from the
concatenated sequence, so hypernymy or dependency edges can be added without touching the
decomposition.

bAbI-Mix (§4.2) is at the end of this module: it builds new documents/items/mentions rows.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from tasks.core.errors import CorefreproError
from tasks.core.registry import Registry
from tasks.core.splits import seeded_rng

Span = tuple[int, int, int]  # (start, end exclusive, cluster)
Edge = tuple[int, int]  # (source, target) token indices of the concatenated sequence

ON_CONFLICT = ("error", "nearest")
PLACEMENTS = ("paper", "sentence")  # where a coreference edge leaves/enters (module docstring)
ORDERS = ("random", "document_query", "query_document")  # segment order (module docstring)
MENTION_SPANS = ("annotated", "no_determiner")  # mention span (module docstring)
CORRUPTIONS = ("drop", "rewire")  # what a corrupted coreference link becomes (module docstring)
# leading words "no_determiner" drops; the same set as the entity-id annotator's DETERMINERS
# (tasks/annotation/annotators/entity_id.py), repeated so the graph stage does not import it
DETERMINERS = frozenset({"the", "a", "an"})
SENTENCE_ENDS = frozenset({".", "?", "!"})
DEFAULT_EDGE_TYPES = ("sequential", "coreference")


class GraphError(CorefreproError):
    """A graph that violates MAGE's assumptions (names the graph and the document)."""


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Segment:
    """One sequence of a graph: a name, its tokens, and mentions indexing those tokens."""

    name: str
    tokens: Sequence[str]
    mentions: Sequence[Span] = ()


@dataclass(frozen=True)
class Concatenation:
    """Segments laid end to end: what edge builders see (all indices are global)."""

    graph_id: str
    doc_id: str
    tokens: list[str]
    segments: list[str]
    segment_starts: list[int]
    mentions: list[Span]  # sorted by (start, end, cluster), duplicates removed


def concatenate(
    segments: Sequence[Segment], *, graph_id: str = "graph", doc_id: str | None = None
) -> Concatenation:
    """Join segments into one sequence, shifting mention spans to global indices."""
    tokens: list[str] = []
    names: list[str] = []
    starts: list[int] = []
    spans: set[Span] = set()
    for seg in segments:
        offset = len(tokens)
        for start, end, cluster in seg.mentions:
            if not 0 <= start < end <= len(seg.tokens):
                raise GraphError(
                    f"graph {graph_id} (document {doc_id or graph_id}): mention "
                    f"[{start}, {end}) outside segment '{seg.name}' of {len(seg.tokens)} tokens"
                )
            spans.add((start + offset, end + offset, int(cluster)))
        names.append(seg.name)
        starts.append(offset)
        tokens.extend(seg.tokens)
    return Concatenation(graph_id, doc_id or graph_id, tokens, names, starts, sorted(spans))


# --------------------------------------------------------------------------- edge types

EdgeBuilder = Callable[[Concatenation, Counter], Iterable[Edge]]


@dataclass(frozen=True)
class EdgeType:
    """A relation: its name, its inverse's name (§3.1 e'), and how to find its edges.

    forward_only: every original edge goes from an earlier to a later token, so the type
    feeds only the forward DAG and its inverse only the backward one (true for sequence and
    coreference as built here). Types whose edges go both ways appear in both DAGs.
    """

    name: str
    inverse: str
    build: EdgeBuilder
    forward_only: bool = True
    doc: str = ""
    # the inverse type's edges, when they are not the original edges reversed (placement
    # "sentence"); given as (source, target) pairs of the backward direction
    build_inverse: EdgeBuilder | None = None


def sequential_edges(seq: Concatenation, stats: Counter) -> list[Edge]:
    """t-1 -> t over the whole concatenation (§3.3: one long sequence)."""
    return [(t - 1, t) for t in range(1, len(seq.tokens))]


def coreference_edges(seq: Concatenation, stats: Counter) -> list[Edge]:
    """Last token of a mention -> first token of the chain's next mention (module docstring)."""
    chains: dict[int, list[Span]] = defaultdict(list)
    for span in seq.mentions:
        chains[span[2]].append(span)
    edges: list[Edge] = []
    for cluster in sorted(chains):
        spans = chains[cluster]  # already in (start, end) order
        for (_, prev_end, _), (next_start, _, _) in zip(spans, spans[1:], strict=False):
            if prev_end - 1 < next_start:
                edges.append((prev_end - 1, next_start))
            else:
                stats["coref_overlapping_pairs_skipped"] += 1
    return edges


def sentence_bounds(seq: Concatenation) -> list[tuple[int, int]]:
    """(first, last) token of each token's sentence: sentences end at . ? ! and at segment
    boundaries (context and query are separate sequences, §3.3)."""
    n = len(seq.tokens)
    cuts = sorted(
        {*seq.segment_starts, n} | {i + 1 for i, t in enumerate(seq.tokens) if t in SENTENCE_ENDS}
    )
    bounds: list[tuple[int, int]] = []
    start = 0
    for cut in cuts:
        if cut > start:
            bounds.extend([(start, cut - 1)] * (cut - start))
            start = cut
    return bounds


def _chain_pairs(seq: Concatenation) -> Iterable[tuple[Span, Span]]:
    """Consecutive mentions of each chain, chains in cluster order."""
    chains: dict[int, list[Span]] = defaultdict(list)
    for span in seq.mentions:
        chains[span[2]].append(span)
    for cluster in sorted(chains):
        yield from zip(chains[cluster], chains[cluster][1:], strict=False)


def coreference_sentence_edges(seq: Concatenation, stats: Counter) -> list[Edge]:
    """Forward DAG, placement "sentence": end of the previous mention's sentence -> first token
    of the next mention (the paper's edge when both lie in one sentence)."""
    bounds = sentence_bounds(seq)
    edges: list[Edge] = []
    for (_, prev_end, _), (next_start, _, _) in _chain_pairs(seq):
        if prev_end - 1 >= next_start:
            stats["coref_overlapping_pairs_skipped"] += 1
            continue
        source = bounds[prev_end - 1][1]
        if source >= next_start:
            source = prev_end - 1
            stats["coref_same_sentence_pairs"] += 1
        edges.append((source, next_start))
    return edges


def coreference_sentence_inverse(seq: Concatenation, stats: Counter) -> list[Edge]:
    """Backward DAG, placement "sentence": start of the next mention's sentence -> last token
    of the previous mention (the paper's inverse edge when both lie in one sentence)."""
    bounds = sentence_bounds(seq)
    edges: list[Edge] = []
    for (_, prev_end, _), (next_start, _, _) in _chain_pairs(seq):
        if prev_end - 1 >= next_start:
            continue  # counted by the forward builder
        source = bounds[next_start][0]
        edges.append((source if source > prev_end - 1 else next_start, prev_end - 1))
    return edges


COREFERENCE_SENTENCE = EdgeType(
    "coreference",
    "coreference_inverse",
    coreference_sentence_edges,
    doc="forward: end of the previous mention's sentence -> first token of the next mention; "
    "backward: start of the next mention's sentence -> last token of the previous mention",
    build_inverse=coreference_sentence_inverse,
)


def with_placement(edge_types: Sequence[str | EdgeType], placement: str) -> list[str | EdgeType]:
    """The edge types with coreference placed as `placement` (PLACEMENTS)."""
    if placement not in PLACEMENTS:
        raise GraphError(f"coreference placement must be one of {PLACEMENTS}, not {placement!r}")
    if placement == "paper":
        return list(edge_types)
    return [COREFERENCE_SENTENCE if et == "coreference" else et for et in edge_types]


EDGE_TYPES: Registry[EdgeType] = Registry(
    "edge type", setting="params.yaml graphs.edge_types", error=GraphError
)


def register_edge_type(edge_type: EdgeType, *, replace: bool = False) -> None:
    """Add a relation to the registry (its name and inverse name must be new)."""
    taken = {
        n for t in EDGE_TYPES.values() if t.name != edge_type.name for n in (t.name, t.inverse)
    }
    if not replace and edge_type.name in EDGE_TYPES:
        raise GraphError(f"edge type '{edge_type.name}' is already registered")
    if edge_type.name == edge_type.inverse or {edge_type.name, edge_type.inverse} & taken:
        raise GraphError(f"edge type names {edge_type.name!r}/{edge_type.inverse!r} clash")
    EDGE_TYPES.register(edge_type.name, edge_type, replace=True)  # the clashes checked above


register_edge_type(
    EdgeType("sequential", "sequential_inverse", sequential_edges, doc="t-1 -> t (§3.1)")
)
register_edge_type(
    EdgeType(
        "coreference",
        "coreference_inverse",
        coreference_edges,
        doc="last token of a mention -> first token of the chain's next mention",
    )
)


def resolve_edge_types(edge_types: Sequence[str | EdgeType]) -> list[EdgeType]:
    out: list[EdgeType] = []
    for et in edge_types:
        if isinstance(et, EdgeType):
            out.append(et)
        else:
            out.append(EDGE_TYPES[et])  # an unknown name: GraphError naming the setting
    names = [n for et in out for n in (et.name, et.inverse)]
    if len(set(names)) != len(names):
        raise GraphError(f"edge types listed twice or clashing: {names}")
    if not out:
        raise GraphError("at least one edge type is needed")
    return out


def edge_type_names(edge_types: Sequence[str | EdgeType]) -> tuple[list[str], list[str]]:
    """Names of the forward and backward DAG's edge types, in the order of the arrays."""
    forward: list[str] = []
    backward: list[str] = []
    for et in resolve_edge_types(edge_types):
        if et.forward_only:
            forward.append(et.name)
            backward.append(et.inverse)
        else:
            forward.extend((et.name, et.inverse))
            backward.extend((et.name, et.inverse))
    return forward, backward


# --------------------------------------------------------------------------- one graph


@dataclass
class Graph:
    """Chain-decomposed forward/backward DAGs of one concatenated sequence."""

    tokens: list[str]
    segments: list[str]
    segment_starts: list[int]
    chain: list[int]
    forward: list[list[int]]
    backward: list[list[int]]
    forward_types: list[str]
    backward_types: list[str]
    stats: Counter = field(default_factory=Counter)
    # with a Corruption: (the annotation's clusters, the corrupted ones), for scoring
    clusters: tuple[list, list] | None = None


def token_chains(n_tokens: int, mentions: Iterable[Span]) -> list[int]:
    """Cluster of each token (-1 = none) for the one-hot baseline (§4.1).

    A token inside nested mentions takes the innermost (shortest) one's cluster; identical
    spans of two clusters give the smaller cluster id. Deterministic by construction.
    """
    chain = [-1] * n_tokens
    for start, end, cluster in sorted(mentions, key=lambda m: (-(m[1] - m[0]), m[0], -m[2])):
        chain[start:end] = [cluster] * (end - start)
    return chain


def _predecessors(
    edges: Iterable[Edge],
    n_tokens: int,
    *,
    backward: bool,
    type_name: str,
    seq: Concatenation,
    on_conflict: str,
    stats: Counter,
) -> list[int]:
    """Predecessor per token for one edge type of one DAG; at most one (Eq. 4)."""
    pred = [-1] * n_tokens
    for src, dst in sorted(edges):
        old = pred[dst]
        if old == -1 or old == src:
            pred[dst] = src
            continue
        if on_conflict == "error":
            a, b = sorted((old, src))
            raise GraphError(
                f"graph {seq.graph_id} (document {seq.doc_id}): token {dst} "
                f"({seq.tokens[dst]!r}) gets two incoming '{type_name}' edges, from tokens "
                f"{a} and {b}; MAGE's chain decomposition (Dhingra et al. §3.2, Eq. 4) allows "
                f"one per edge type. Nested mentions of different chains that share a first "
                f"(or last) token cause this; graphs.on_conflict: nearest keeps the nearer one."
            )
        # nearest: the source closest to the target (latest in forward, earliest in backward)
        pred[dst] = min(old, src) if backward else max(old, src)
        stats[f"conflicts_resolved_{type_name}"] += 1
    return pred


def decompose(
    seq: Concatenation,
    edge_types: Sequence[str | EdgeType] = DEFAULT_EDGE_TYPES,
    *,
    on_conflict: str = "error",
) -> Graph:
    """E_0 -> E (with inverses) -> forward/backward DAGs -> predecessor arrays (§3.1-3.2)."""
    if on_conflict not in ON_CONFLICT:
        raise GraphError(f"on_conflict must be one of {ON_CONFLICT}, not {on_conflict!r}")
    types = resolve_edge_types(edge_types)
    n = len(seq.tokens)
    stats: Counter = Counter()
    fwd: dict[str, set[Edge]] = {}
    bwd: dict[str, set[Edge]] = {}
    for et in types:
        original = set(et.build(seq, stats))  # E_0 is a set: duplicate edges are one edge
        for src, dst in original:
            if not (0 <= src < n and 0 <= dst < n) or src == dst:
                raise GraphError(
                    f"graph {seq.graph_id} (document {seq.doc_id}): edge type {et.name!r} "
                    f"built edge ({src}, {dst}) outside 0..{n - 1} or a self-loop"
                )
            if et.forward_only and src > dst:
                raise GraphError(
                    f"graph {seq.graph_id}: edge type {et.name!r} is declared forward_only "
                    f"but built the backward edge ({src}, {dst})"
                )
        stats[f"edges_{et.name}"] += len(original)
        inverse = (
            set(et.build_inverse(seq, stats))
            if et.build_inverse is not None
            else {(dst, src) for src, dst in original}
        )
        # §3.1: E_f = {(x_i, x_j, e) in E : i < j}, E_b = {(x_i, x_j, e) in E : i > j}; for a
        # forward_only type E_f holds only e and E_b only e' (edge_type_names drops the rest)
        for name, edges in ((et.name, original), (et.inverse, inverse)):
            fwd.setdefault(name, set()).update((s, d) for s, d in edges if s < d)
            bwd.setdefault(name, set()).update((s, d) for s, d in edges if s > d)
    f_names, b_names = edge_type_names(types)
    forward = [
        _predecessors(
            fwd.get(name, ()),
            n,
            backward=False,
            type_name=name,
            seq=seq,
            on_conflict=on_conflict,
            stats=stats,
        )
        for name in f_names
    ]
    backward = [
        _predecessors(
            bwd.get(name, ()),
            n,
            backward=True,
            type_name=name,
            seq=seq,
            on_conflict=on_conflict,
            stats=stats,
        )
        for name in b_names
    ]
    return Graph(
        tokens=list(seq.tokens),
        segments=list(seq.segments),
        segment_starts=list(seq.segment_starts),
        chain=token_chains(n, seq.mentions),
        forward=forward,
        backward=backward,
        forward_types=f_names,
        backward_types=b_names,
        stats=stats,
    )


def build_graph(
    segments: Sequence[Segment],
    *,
    edge_types: Sequence[str | EdgeType] = DEFAULT_EDGE_TYPES,
    on_conflict: str = "error",
    graph_id: str = "graph",
    doc_id: str | None = None,
    corruption: Corruption | None = None,
) -> Graph:
    """The pure function: segments, already in their final order, to one Graph (with its
    coreference links corrupted first where `corruption` says so)."""
    seq = concatenate(segments, graph_id=graph_id, doc_id=doc_id)
    if corruption is None:
        return decompose(seq, edge_types, on_conflict=on_conflict)
    stats: Counter = Counter()
    corrupted = replace(seq, mentions=corrupt_links(seq.mentions, corruption, graph_id, stats))
    graph = decompose(corrupted, edge_types, on_conflict=on_conflict)
    graph.stats.update(stats)
    graph.clusters = (_clusters(seq.mentions), _clusters(corrupted.mentions))
    return graph


def _clusters(mentions: Iterable[Span]) -> list[list[tuple[int, int]]]:
    """Spans grouped by cluster: the clustering a coreference scorer reads."""
    chains: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for start, end, cluster in mentions:
        chains[cluster].append((start, end))
    return [chains[c] for c in sorted(chains)]


def segment_order(
    item_id: str, seed: int, names: Sequence[str], order: str = "random"
) -> list[str]:
    """The order of an item's sequences: one seeded random permutation fixed by (seed, item)
    (§3.3), or a fixed order (ORDERS; "document" is the context segment)."""
    if order not in ORDERS:
        raise GraphError(f"segment order must be one of {ORDERS}, not {order!r}")
    if order != "random":
        fixed = ["context", "query"] if order == "document_query" else ["query", "context"]
        return [n for n in fixed if n in names] + [n for n in names if n not in fixed]
    out = list(names)
    seeded_rng("graphs", seed, item_id).shuffle(out)
    return out


def trim_determiners(spans: Iterable[Span], tokens: Sequence[str], stats: Counter) -> list[Span]:
    """Mention span "no_determiner": a leading determiner (DETERMINERS) dropped from every
    mention longer than one token; spans that become equal are one (sorted, deduplicated)."""
    out: set[Span] = set()
    for start, end, cluster in spans:
        if end - start > 1 and start < len(tokens) and str(tokens[start]).lower() in DETERMINERS:
            start += 1
            stats["mention_determiners_dropped"] += 1
        out.add((start, end, cluster))
    return sorted(out)


@dataclass(frozen=True)
class Corruption:
    """Drop or rewire a share `rate` of the coreference links of every graph, drawn from
    (seed, graph id) so a graph's corruption does not depend on the others'."""

    mode: str  # one of CORRUPTIONS
    rate: float  # 0..1: the probability of each link being corrupted
    seed: int

    def __post_init__(self) -> None:
        if self.mode not in CORRUPTIONS:
            raise GraphError(f"corruption must be one of {CORRUPTIONS}, not {self.mode!r}")
        if not 0.0 <= self.rate <= 1.0:
            raise GraphError(f"corruption rate must lie in [0, 1], not {self.rate!r}")


def corrupt_links(
    mentions: Sequence[Span], corruption: Corruption, graph_id: str, stats: Counter
) -> list[Span]:
    """New cluster ids for `mentions` (sorted spans) with a share of their links corrupted.

    Mentions are visited in order; each link (a mention and its chain's previous mention) is
    kept with probability 1 - rate. A dropped link starts a new chain at the mention; a
    rewired one puts the mention in a chain of an earlier mention outside its predecessor's
    chain (dropped when there is none). A chain's first mention keeps its cluster id, so rate
    0 returns the spans unchanged; later mentions follow their predecessor's new chain.
    """
    rng = seeded_rng("corrupt", corruption.seed, graph_id)
    fresh = max((c for _, _, c in mentions), default=-1) + 1
    previous: dict[int, int] = {}  # original cluster -> index of its latest mention
    labels: list[int] = []
    for i, (_, _, cluster) in enumerate(mentions):
        prev = previous.get(cluster)
        previous[cluster] = i
        if prev is None:
            labels.append(cluster)
            continue
        stats["coref_links"] += 1
        if rng.random() >= corruption.rate:
            labels.append(labels[prev])
            continue
        others = sorted({labels[j] for j in range(i)} - {labels[prev]})
        if corruption.mode == "rewire" and others:
            labels.append(rng.choice(others))
            stats["coref_links_rewired"] += 1
        else:
            labels.append(fresh)
            fresh += 1
            stats["coref_links_dropped"] += 1
    return sorted({(s, e, c) for (s, e, _), c in zip(mentions, labels, strict=True)})


# --------------------------------------------------------------------------- tables


def as_rows(table: pa.Table | Iterable[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    if table is None:
        return []
    if isinstance(table, pa.Table):
        return table.to_pylist()
    return list(table)


def select_annotator(rows: list[Mapping[str, Any]], annotator: str | None, what: str) -> list:
    names = sorted({r["annotator"] for r in rows})
    if annotator is not None:
        return [r for r in rows if r["annotator"] == annotator]
    if len(names) > 1:
        raise GraphError(
            f"{what}: mentions from several annotators {names}; pass annotator=... to pick one"
        )
    return rows


def group_mentions(
    mentions: pa.Table | Iterable[Mapping[str, Any]] | None,
    key: str = "doc_id",
    *,
    annotator: str | None = None,
) -> dict[str, list[Span]]:
    """Mentions table rows -> {doc_id (or item_id): [(start, end, cluster), ...]} (sorted)."""
    rows = select_annotator(as_rows(mentions), annotator, f"mentions by {key}")
    grouped: dict[str, set[Span]] = defaultdict(set)
    for r in rows:
        grouped[r[key]].add((int(r["start"]), int(r["end"]), int(r["cluster"])))
    return {k: sorted(v) for k, v in grouped.items()}


@dataclass
class GraphBuild:
    """build_graphs' result: GRAPHS rows, the table metadata, and counts for the notes."""

    rows: list[dict[str, Any]]
    metadata: dict[str, str]
    stats: Counter
    # with a Corruption: graph_id -> (the annotation's clusters, the corrupted ones)
    clusters: dict[str, tuple[list, list]] = field(default_factory=dict)


def graph_metadata(edge_types: Sequence[str | EdgeType], **extra: Any) -> dict[str, str]:
    """Table metadata naming the outer lists of GRAPHS.forward/backward (JSON strings)."""
    f_names, b_names = edge_type_names(edge_types)
    placed = COREFERENCE_SENTENCE in edge_types
    meta = {
        "forward_edge_types": json.dumps(f_names),
        "backward_edge_types": json.dumps(b_names),
        "coreference_edge": COREFERENCE_SENTENCE.doc
        if placed
        else "last token of a mention -> first token of the chain's next mention",
    }
    if placed:
        meta["coreference_placement"] = "sentence"
    meta.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in extra.items()})
    return meta


def _graph_row(
    graph: Graph, graph_id: str, doc_id: str, split: str, item: Mapping[str, Any] | None
) -> dict[str, Any]:
    return {
        "graph_id": graph_id,
        "doc_id": doc_id,
        "item_id": item["item_id"] if item else None,
        "split": split,
        "tokens": graph.tokens,
        "segments": graph.segments,
        "segment_starts": graph.segment_starts,
        "chain": graph.chain,
        "forward": graph.forward,
        "backward": graph.backward,
        "task": item["task"] if item else None,
        "answer": item["answer"] if item else None,
        "candidates": item.get("candidates") if item else None,
    }


def clip_mentions(spans: Iterable[Span], end: int) -> tuple[list[Span], int]:
    """Mentions inside the prefix [0, end); also how many cross `end` (dropped)."""
    kept: list[Span] = []
    crossing = 0
    for s, e, c in spans:
        if e <= end:
            kept.append((s, e, c))
        elif s < end:
            crossing += 1
    return kept, crossing


@dataclass(frozen=True)
class GraphInput:
    """One graph before its edges: its sequences in their final order (what build_graph
    decomposes and graph_clusters scores), its ids and, for an item graph, the item."""

    graph_id: str
    doc_id: str
    split: str
    item: Mapping[str, Any] | None
    segments: list[Segment]


def graph_inputs(
    documents: pa.Table | Iterable[Mapping[str, Any]],
    items: pa.Table | Iterable[Mapping[str, Any]] | None,
    mentions: pa.Table | Iterable[Mapping[str, Any]] | None,
    query_mentions: pa.Table | Iterable[Mapping[str, Any]] | None,
    *,
    seed: int,
    stats: Counter,
    annotator: str | None = None,
    order: str = "random",
    mention_span: str = "annotated",
) -> Iterable[GraphInput]:
    """Each graph's sequences, in build_graphs' order and reading (its docstring): the one place
    that decides which tokens and mentions a graph holds and in what order, so the graphs
    written and the coreference scored (graph_clusters) are the same graphs. The settings and
    the tables' ids are checked here; each graph is made as it is taken (counts in `stats`)."""
    if order not in ORDERS:
        raise GraphError(f"segment order must be one of {ORDERS}, not {order!r}")
    if mention_span not in MENTION_SPANS:
        raise GraphError(f"mention span must be one of {MENTION_SPANS}, not {mention_span!r}")
    docs = {r["doc_id"]: r for r in as_rows(documents)}
    item_rows = as_rows(items)
    doc_mentions = group_mentions(mentions, annotator=annotator)
    q_mentions = group_mentions(query_mentions, "item_id", annotator=annotator)
    for doc_id, spans in doc_mentions.items():
        if doc_id not in docs:
            raise GraphError(f"mentions: document {doc_id} is not in the documents table")
        n = len(docs[doc_id]["tokens"])
        bad = [s for s in spans if s[1] > n]
        if bad:
            raise GraphError(
                f"mentions: span [{bad[0][0]}, {bad[0][1]}) beyond document {doc_id} ({n} tokens)"
            )
        if mention_span == "no_determiner":
            doc_mentions[doc_id] = trim_determiners(spans, docs[doc_id]["tokens"], stats)
    if item_rows:
        known = {r["item_id"] for r in item_rows}
        stray = sorted(set(q_mentions) - known)
        if stray:
            raise GraphError(f"query mentions for unknown items, e.g. {stray[:3]}")
    elif q_mentions:
        raise GraphError("query mentions given for a corpus without items")
    return _graph_inputs(docs, item_rows, doc_mentions, q_mentions, seed=seed, stats=stats,
                         order=order, mention_span=mention_span)  # fmt: skip


def _graph_inputs(docs: Mapping[str, Mapping[str, Any]], item_rows: list[Mapping[str, Any]],
                  doc_mentions: Mapping[str, list[Span]], q_mentions: Mapping[str, list[Span]],
                  *, seed: int, stats: Counter, order: str, mention_span: str
                  ) -> Iterable[GraphInput]:  # fmt: skip
    if not item_rows:
        for doc_id, doc in docs.items():
            segments = [Segment("document", doc["tokens"], doc_mentions.get(doc_id, ()))]
            yield GraphInput(doc_id, doc_id, doc["split"], None, segments)
        return
    for item in item_rows:
        doc = docs.get(item["doc_id"])
        if doc is None:
            raise GraphError(f"item {item['item_id']}: document {item['doc_id']} missing")
        end = int(item["context_end"])
        if not 0 <= end <= len(doc["tokens"]):
            raise GraphError(
                f"item {item['item_id']}: context_end {end} outside document "
                f"{doc['doc_id']} ({len(doc['tokens'])} tokens)"
            )
        kept, crossing = clip_mentions(doc_mentions.get(doc["doc_id"], ()), end)
        stats["mentions_crossing_context_end"] += crossing
        q_spans = q_mentions.get(item["item_id"], ())
        if mention_span == "no_determiner":
            q_spans = trim_determiners(q_spans, item["query"], stats)
        segs = {
            "context": Segment("context", doc["tokens"][:end], kept),
            "query": Segment("query", item["query"], q_spans),
        }
        names = [name for name in ("context", "query") if segs[name].tokens]
        segments = segment_order(item["item_id"], seed, names, order)
        stats[f"order_{'+'.join(segments)}"] += 1
        yield GraphInput(item["item_id"], doc["doc_id"], item["split"], item,
                         [segs[name] for name in segments])  # fmt: skip


def graph_clusters(
    documents: pa.Table | Iterable[Mapping[str, Any]],
    items: pa.Table | Iterable[Mapping[str, Any]] | None,
    mentions: pa.Table | Iterable[Mapping[str, Any]] | None,
    query_mentions: pa.Table | Iterable[Mapping[str, Any]] | None,
    *,
    seed: int,
    annotator: str | None = None,
    order: str = "random",
    mention_span: str = "annotated",
) -> dict[str, list[list[tuple[int, int]]]]:
    """graph id -> the coreference of the graph build_graphs writes with these settings, as a
    scorer reads it: the clusters of the concatenated sequences' mentions (global spans, the
    query's included). Two annotation runs of one corpus give graphs of the same ids and
    tokens, so one run's clusters can be scored against the other's (graphs_reference)."""
    stats: Counter = Counter()
    out = {}
    for g in graph_inputs(documents, items, mentions, query_mentions, seed=seed, stats=stats,
                          annotator=annotator, order=order, mention_span=mention_span):  # fmt: skip
        seq = concatenate(g.segments, graph_id=g.graph_id, doc_id=g.doc_id)
        out[g.graph_id] = _clusters(seq.mentions)
    return dict(sorted(out.items()))


def build_graphs(
    documents: pa.Table | Iterable[Mapping[str, Any]],
    items: pa.Table | Iterable[Mapping[str, Any]] | None,
    mentions: pa.Table | Iterable[Mapping[str, Any]] | None,
    query_mentions: pa.Table | Iterable[Mapping[str, Any]] | None,
    *,
    seed: int,
    edge_types: Sequence[str | EdgeType] = DEFAULT_EDGE_TYPES,
    on_conflict: str = "error",
    annotator: str | None = None,
    placement: str = "paper",
    order: str = "random",
    mention_span: str = "annotated",
    corruption: Corruption | None = None,
) -> GraphBuild:
    """GRAPHS rows for a corpus: one per item (context prefix + query, §3.3) where the corpus
    has items, else one per document. Rows are sorted by graph_id. `placement`: where a
    coreference edge leaves and enters a mention (PLACEMENTS); `order`: the segment order
    (ORDERS); `mention_span`: the annotation's spans or without their determiner
    (MENTION_SPANS); `corruption`: drop or rewire a share of the coreference links
    (Corruption); see the module docstring.

    Item graphs: the context is the first context_end tokens of the item's document; document
    mentions crossing context_end are dropped and counted (stats
    "mentions_crossing_context_end"); query mentions (same cluster space) index the query.
    The order [context, query] or [query, context] is drawn once per item from (seed,
    item_id), or fixed by `order`; an empty sequence (LAMBADA's query) is left out, so such
    graphs hold the context alone. Which graphs, tokens and mentions: graph_inputs.
    """
    edge_types = with_placement(edge_types, placement)
    stats: Counter = Counter()
    inputs = graph_inputs(documents, items, mentions, query_mentions, seed=seed, stats=stats,
                          annotator=annotator, order=order, mention_span=mention_span)  # fmt: skip
    rows: list[dict[str, Any]] = []
    clusters: dict[str, tuple[list, list]] = {}
    for g in inputs:
        graph = build_graph(
            g.segments,
            edge_types=edge_types,
            on_conflict=on_conflict,
            graph_id=g.graph_id,
            doc_id=g.doc_id,
            corruption=corruption,
        )
        stats.update(graph.stats)
        if graph.clusters is not None:
            clusters[g.graph_id] = graph.clusters
        rows.append(_graph_row(graph, g.graph_id, g.doc_id, g.split, g.item))
    rows.sort(key=lambda r: r["graph_id"])
    stats["graphs"] = len(rows)
    stats["tokens"] = sum(len(r["tokens"]) for r in rows)
    variant = {"segment_order": order} if order != "random" else {}
    if mention_span != "annotated":
        variant["mention_span"] = mention_span
    if corruption is not None:
        variant["coref_corruption"] = (
            f"{corruption.mode} {corruption.rate:g} seed {corruption.seed}"
        )
    metadata = graph_metadata(edge_types, seed=seed, on_conflict=on_conflict, **variant)
    return GraphBuild(rows, metadata, stats, clusters)


__all__ = [
    "DEFAULT_EDGE_TYPES",
    "PLACEMENTS",
    "EDGE_TYPES",
    "CORRUPTIONS",
    "Concatenation",
    "Corruption",
    "MENTION_SPANS",
    "ORDERS",
    "EdgeType",
    "Graph",
    "GraphBuild",
    "GraphError",
    "GraphInput",
    "Segment",
    "as_rows",
    "build_graph",
    "build_graphs",
    "clip_mentions",
    "concatenate",
    "corrupt_links",
    "coreference_edges",
    "decompose",
    "edge_type_names",
    "graph_clusters",
    "graph_inputs",
    "graph_metadata",
    "group_mentions",
    "register_edge_type",
    "segment_order",
    "sequential_edges",
    "token_chains",
    "trim_determiners",
]
