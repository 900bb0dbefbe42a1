"""bAbI-Mix (Dhingra et al. 2018, §4.2): two bAbI stories of one (split, task, release)
interleaved, one of them with its entities renamed; every question of both asked over the mix.
A derived corpus (tasks/graphs/derive.py), annotated and turned into graphs like any other."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from tasks.core.errors import CorefreproError
from tasks.core.splits import seeded_rng
from tasks.corpora.base import Normalized
from tasks.graphs.dags import as_rows, group_mentions, select_annotator

# # §4.2: "replacing all entity mentions in one of the stories with alternates, so "Daniel"
# becomes "David", "milk" becomes "juice" and so on. Then we mixed the sentences in the two
# stories, in random order, and asked a question about one of the stories." The alternates are
# ours except the paper's two examples; names keep their gender (tasks 13/16 use he/she), and
# plural forms map to plural forms. Directions, numbers, yes/no, time words and feelings are
# not entities and are kept.

_ALTERNATES_LOWER = {
    # people
    "daniel": "david",
    "john": "peter",
    "sandra": "laura",
    "mary": "alice",
    "bill": "tom",
    "fred": "harry",
    "jeff": "mark",
    "julie": "sarah",
    "emily": "olivia",
    "winona": "rachel",
    "gertrude": "hannah",
    "jessica": "monica",
    "brian": "kevin",
    "lily": "rose",
    "bernhard": "oscar",
    "greg": "steve",
    "julius": "victor",
    "antoine": "pierre",
    "sumit": "rahul",
    "jason": "ethan",
    "yann": "luca",
    # places
    "bathroom": "cellar",
    "bedroom": "attic",
    "hallway": "corridor",
    "kitchen": "pantry",
    "garden": "yard",
    "office": "study",
    "park": "beach",
    "cinema": "theater",
    "school": "library",
    # objects
    "milk": "juice",
    "apple": "pear",
    "football": "basketball",
    "book": "magazine",
    "pajamas": "slippers",
    "chocolate": "candy",
    "chocolates": "candies",
    "box": "crate",
    "chest": "trunk",
    "container": "basket",
    "suitcase": "bag",
    # animals (sheep/deer: same singular and plural)
    "cat": "dog",
    "cats": "dogs",
    "mouse": "hamster",
    "mice": "hamsters",
    "sheep": "deer",
    "wolf": "fox",
    "wolves": "foxes",
    "lion": "tiger",
    "frog": "toad",
    "rhino": "hippo",
    "swan": "duck",
    # colours and shapes (tasks 16, 17)
    "white": "black",
    "yellow": "orange",
    "green": "purple",
    "gray": "brown",
    "red": "violet",
    "blue": "cyan",
    "pink": "beige",
    "square": "circle",
    "rectangle": "pentagon",
    "triangle": "hexagon",
    "sphere": "cube",
}
BABI_ALTERNATES: dict[str, str] = {
    **_ALTERNATES_LOWER,
    **{k.capitalize(): v.capitalize() for k, v in _ALTERNATES_LOWER.items()},
}


def _rename(tokens: Sequence[str], alternates: Mapping[str, str]) -> list[str]:
    return [alternates.get(t, t) for t in tokens]


def _rename_answer(answer: str, alternates: Mapping[str, str]) -> str:
    return ",".join(alternates.get(a, a) for a in answer.split(","))


def _sentences(doc: Mapping[str, Any]) -> list[tuple[int, int]]:
    starts = list(doc["sentence_starts"])
    ends = starts[1:] + [len(doc["tokens"])]
    return list(zip(starts, ends, strict=True))


def _common_id(a: str, b: str) -> str:
    """'babi/en/qa1/train/0', 'babi/en/qa1/train/13' -> 'en/qa1/train/0+13'."""
    pa_, pb = a.split("/")[1:], b.split("/")[1:]
    i = 0
    while i < min(len(pa_), len(pb)) - 1 and pa_[i] == pb[i]:
        i += 1
    return "/".join(pa_[:i] + ["/".join(pa_[i:]) + "+" + "/".join(pb[i:])])


def _release(doc_id: str, task: str) -> str:
    """The part of a doc_id before its task label: 'babi/en-10k/qa1/train/3' -> 'babi/en-10k'
    ('' when the id has no task component, as in the generated corpus)."""
    parts = doc_id.split("/")
    return "/".join(parts[: parts.index(task)]) if task and task in parts else ""


def mix_babi(
    documents: pa.Table | Iterable[Mapping[str, Any]],
    items: pa.Table | Iterable[Mapping[str, Any]],
    mentions: pa.Table | Iterable[Mapping[str, Any]] | None = None,
    *,
    seed: int,
    name: str = "babi_mix",
    alternates: Mapping[str, str] = BABI_ALTERNATES,
) -> Normalized:
    """bAbI-Mix (Dhingra et al. §4.2) from normalized bAbI rows (DOCUMENTS/ITEMS/MENTIONS).

    Stories of one (split, task, release) are shuffled and paired (seeded; the release is the
    doc_id's prefix before the task, so bAbI en and en-10k stories never meet); in each pair
    one story, chosen at random, has its entities renamed with `alternates` (tokens, queries,
    answers, candidates); the sentences of the two are interleaved in a uniformly random merge that
    keeps each story's own order. Every question of both stories is asked over the mixed
    story: its context_end becomes the end of its story's last sentence inside the original
    context, and `supporting` sentence indices are remapped. With an odd number of stories
    the last one is mixed with a random other story whose questions are not repeated.
    Mentions are carried over (clusters of the second story shifted past the first's).
    """
    docs = as_rows(documents)
    item_rows = as_rows(items)
    mention_rows = select_annotator(as_rows(mentions), None, "bAbI-Mix")
    annotator = mention_rows[0]["annotator"] if mention_rows else "gold"
    doc_mentions = group_mentions(mention_rows)
    values = set(alternates.values())
    if len(values) != len(alternates):
        raise CorefreproError("bAbI-Mix: the alternates must map distinct words to distinct words")
    vocab = {t for d in docs for t in d["tokens"]} | {t for i in item_rows for t in i["query"]}
    clash = sorted(values & vocab)
    if clash:
        raise CorefreproError(
            f"bAbI-Mix: alternates {clash[:10]} already occur in the corpus; renamed stories "
            f"would share entities with the others"
        )
    by_doc: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for it in item_rows:
        by_doc[it["doc_id"]].append(it)
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for d in docs:
        task = min((i["task"] for i in by_doc.get(d["doc_id"], [])), default="")
        release = _release(d["doc_id"], task)
        # stories of one release only (bAbI en with en, en-10k with en-10k); no release part
        # in the key when there is none, so such corpora keep their seeded pairing
        groups[(d["split"], task, release) if release else (d["split"], task)].append(d)

    out_docs: list[dict[str, Any]] = []
    out_items: list[dict[str, Any]] = []
    out_mentions: list[dict[str, Any]] = []
    notes: list[str] = []
    for key in sorted(groups):
        group = sorted(groups[key], key=lambda d: d["doc_id"])
        rng = seeded_rng("babi_mix", seed, *key)
        rng.shuffle(group)
        pairs = [(group[i], group[i + 1], True) for i in range(0, len(group) - 1, 2)]
        if len(group) % 2:
            last = group[-1]
            if len(group) == 1:
                lost = len(by_doc.get(last["doc_id"], []))
                notes.append(
                    f"{key}: a single story, nothing to mix it with: dropped ({lost} questions)"
                )
                continue
            pairs.append((last, rng.choice(group[:-1]), False))
            notes.append(f"{key}: odd count, {last['doc_id']} mixed with a reused story")
        for first, second, ask_second in pairs:
            rename_first = rng.random() < 0.5
            stories = [(first, rename_first, True), (second, not rename_first, ask_second)]
            sents = [_sentences(first), _sentences(second)]
            total = len(sents[0]) + len(sents[1])
            slots_first = set(rng.sample(range(total), len(sents[0])))
            layout = [0 if k in slots_first else 1 for k in range(total)]
            doc_id = f"{name}/{_common_id(first['doc_id'], second['doc_id'])}"
            tokens: list[str] = []
            starts: list[int] = []
            speakers: list[str] | None = (
                []
                if first.get("speakers") is not None and second.get("speakers") is not None
                else None
            )
            # where each story's sentence k landed: (mixed sentence index, token offset)
            placed: list[list[tuple[int, int]]] = [[], []]
            nxt = [0, 0]
            for mixed_k, which in enumerate(layout):
                story, renamed, _ = stories[which]
                s, e = sents[which][nxt[which]]
                nxt[which] += 1
                placed[which].append((mixed_k, len(tokens) - s))
                starts.append(len(tokens))
                words = story["tokens"][s:e]
                tokens.extend(_rename(words, alternates) if renamed else words)
                if speakers is not None:
                    speakers.extend(story["speakers"][s:e])
            out_docs.append(
                {
                    "doc_id": doc_id,
                    "split": first["split"],
                    "tokens": tokens,
                    "sentence_starts": starts,
                    "genre": first.get("genre"),
                    "speakers": speakers,
                }
            )
            shift = 0
            for which, (story, renamed, ask) in enumerate(stories):
                spans = doc_mentions.get(story["doc_id"], [])
                sent_of = _sentence_index(story)
                for s, e, c in spans:
                    k = sent_of[s]
                    if sent_of[e - 1] != k:
                        raise CorefreproError(
                            f"bAbI-Mix: mention [{s}, {e}) of {story['doc_id']} crosses a "
                            f"sentence boundary; sentences are moved independently"
                        )
                    off = placed[which][k][1]
                    out_mentions.append(
                        {
                            "doc_id": doc_id,
                            "start": s + off,
                            "end": e + off,
                            "cluster": c + shift,
                            "annotator": annotator,
                        }
                    )
                shift += max((c for _, _, c in spans), default=-1) + 1
                if not ask:
                    continue
                for it in sorted(by_doc.get(story["doc_id"], []), key=lambda r: r["item_id"]):
                    out_items.append(
                        _mixed_item(
                            it, story, which, renamed, doc_id, placed, starts, tokens, alternates
                        )
                    )
    notes.insert(
        0,
        f"bAbI-Mix (Dhingra et al. §4.2): {len(out_docs)} mixed stories, "
        f"{len(out_items)} questions, seed {seed}",
    )
    out_docs.sort(key=lambda r: r["doc_id"])
    out_items.sort(key=lambda r: r["item_id"])
    out_mentions.sort(key=lambda r: (r["doc_id"], r["start"], r["end"], r["cluster"]))
    return Normalized(out_docs, out_items, out_mentions, notes)


def _sentence_index(doc: Mapping[str, Any]) -> list[int]:
    index: list[int] = []
    for k, (s, e) in enumerate(_sentences(doc)):
        index.extend([k] * (e - s))
    return index


def _mixed_item(
    it: Mapping[str, Any],
    story: Mapping[str, Any],
    which: int,
    renamed: bool,
    doc_id: str,
    placed: list[list[tuple[int, int]]],
    starts: list[int],
    tokens: list[str],
    alternates: Mapping[str, str],
) -> dict[str, Any]:
    end = int(it["context_end"])
    sents = _sentences(story)
    inside = [k for k, (_, e) in enumerate(sents) if e <= end]
    if any(s < end < e for s, e in sents):
        raise CorefreproError(
            f"bAbI-Mix: item {it['item_id']} context_end {end} is not at a sentence boundary"
        )
    if inside:
        last_mixed = placed[which][inside[-1]][0]
        mixed_end = starts[last_mixed + 1] if last_mixed + 1 < len(starts) else len(tokens)
    else:
        mixed_end = 0
    prefix = story["doc_id"] + "/"
    item_id = it["item_id"]
    suffix = item_id[len(prefix) :] if item_id.startswith(prefix) else item_id.replace("/", "_")
    supporting = it.get("supporting")
    if supporting is not None and any(not 0 <= k < len(sents) for k in supporting):
        raise CorefreproError(f"bAbI-Mix: item {item_id} supports with a sentence not in its story")
    cands = it.get("candidates")
    return {
        "item_id": f"{doc_id}/{'ab'[which]}/{suffix}",
        "doc_id": doc_id,
        "split": it["split"],
        "task": it["task"],
        "context_end": mixed_end,
        "query": _rename(it["query"], alternates) if renamed else list(it["query"]),
        "answer": _rename_answer(it["answer"], alternates) if renamed else it["answer"],
        "candidates": None
        if cands is None
        else ([_rename_answer(c, alternates) for c in cands] if renamed else list(cands)),
        "supporting": None if supporting is None else [placed[which][k][0] for k in supporting],
    }
