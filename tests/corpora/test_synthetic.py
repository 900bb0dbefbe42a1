"""The embedded default corpus: determinism, answers re-derived by an independent reader,
gold coreference of pronouns, task mix, round trip into the Parquet tables, malformed input.

The checker below does not use the generator's world state: it parses the statements' tokens,
resolves pronoun subjects through the GOLD mentions only, and replays the world.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from tasks.core.errors import CorefreproError, DataError
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS
from tasks.core.storage import check_mentions_in_range, to_table
from tasks.corpora import synthetic

# the checker's own word lists (deliberately not imported from the generator)
MOVE = {("went",), ("moved",), ("journeyed",), ("travelled",), ("went", "back")}
PICKUP = {("picked", "up"), ("got",), ("took",), ("grabbed",)}
DROP = {("dropped",), ("left",), ("put", "down"), ("discarded",)}
GIVE = {("gave",), ("passed",), ("handed",)}
CONNECTIVE = {("Then",), ("Afterwards",), ("After", "that"), ("Following", "that")}
PRONOUN_GENDER = {"he": "male", "she": "female"}
GENDER = synthetic.DEFAULTS["people"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, list[dict]]:
    """The corpus at default settings (generated once: ~0.2 s)."""
    raw = tmp_path_factory.mktemp("synthetic") / "raw"
    synthetic.generate(raw, {})
    stories = []
    for split in synthetic.SPLITS:
        for line in (raw / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            stories.append(json.loads(line))
    return raw, stories


# --------------------------------------------------------------------------- the checker


def parse_story(story: dict) -> list[dict]:
    """Statements as {kind, subject: [people] | None-if-pronoun-unresolved, pronoun, args}."""
    cluster_of = {(s, e): c for s, e, c in story["mentions"]}
    tokens = [t for sent in story["sentences"] for t in sent]
    by_cluster = defaultdict(list)
    for s, e, c in story["mentions"]:
        by_cluster[c].append((s, e))
    out, off = [], 0
    for sent in story["sentences"]:
        assert sent[-1] == ".", sent
        body, j = sent[:-1], 0
        for conn in CONNECTIVE:
            if tuple(body[: len(conn)]) == conn:
                j = len(conn)
        word, first = body[j], off + j
        if word.lower() in ("he", "she", "they"):
            cluster = cluster_of[(off + j, off + j + 1)]
            # antecedent: the closest earlier non-pronoun mention of the same cluster
            earlier = [
                (s, e)
                for s, e in by_cluster[cluster]
                if e <= off + j and tokens[s].lower() not in ("he", "she", "they")
            ]
            assert earlier, f"{story['id']}: pronoun at {off + j} has no antecedent"
            s, e = max(earlier)
            subject = [t for t in tokens[s:e] if t != "and"]
            pronoun, j = True, j + 1
        elif j + 1 < len(body) and body[j + 1] == "and":
            subject, pronoun, j = [body[j], body[j + 2]], False, j + 3
        else:
            subject, pronoun, j = [word], False, j + 1
        rest = tuple(body[j:])
        if rest[-3:-1] == ("to", "the") and rest[:-3] in MOVE:
            stmt = {"kind": "move", "args": (rest[-1],)}
        elif len(rest) == 5 and rest[:1] in GIVE and rest[1] == "the" and rest[3] == "to":
            stmt = {"kind": "give", "args": (rest[2], rest[4])}
        elif rest[-2] == "the" and rest[:-2] in PICKUP:
            stmt = {"kind": "pickup", "args": (rest[-1],)}
        elif rest[-2] == "the" and rest[:-2] in DROP:
            stmt = {"kind": "drop", "args": (rest[-1],)}
        else:
            raise AssertionError(f"{story['id']}: cannot parse {sent}")
        stmt.update(subject=subject, pronoun=pronoun, span=(first, off + j), tokens=sent)
        out.append(stmt)
        off += len(sent)
    return out


def replay(stmts: list[dict], strict: bool, resolve_pronouns: bool = True) -> dict:
    """World after the statements. strict: assert every action is possible (full stories)."""
    loc, holder, placed, hist = {}, {}, {}, defaultdict(list)

    def arrive(obj, place):
        if place is not None and hist[obj][-1:] != [place]:
            hist[obj].append(place)

    for st in stmts:
        subj = st["subject"] if resolve_pronouns or not st["pronoun"] else []
        kind, args = st["kind"], st["args"]
        if kind == "move":
            for p in subj:
                if strict:
                    assert loc.get(p) != args[0], f"{p} moves to where they are: {st['tokens']}"
                loc[p] = args[0]
                for o, h in holder.items():
                    if h == p:
                        arrive(o, args[0])
        elif kind == "pickup":
            (o,) = args
            if strict:
                assert holder.get(o) is None and loc.get(subj[0]) is not None
                assert o not in placed or placed[o] == loc[subj[0]], st["tokens"]
            if subj:
                holder[o] = subj[0]
                placed.pop(o, None)
                arrive(o, loc.get(subj[0]))
        elif kind == "drop":
            (o,) = args
            if strict:
                assert holder.get(o) == subj[0], st["tokens"]
            if subj:
                holder[o] = None
                placed[o] = loc.get(subj[0])
        else:  # give
            o, q = args
            if strict:
                assert holder.get(o) == subj[0] and loc[subj[0]] == loc.get(q), st["tokens"]
            holder[o] = q
            arrive(o, loc.get(q) or (loc.get(subj[0]) if subj else None))
    return {"loc": loc, "holder": holder, "placed": placed, "hist": hist}


def answer(world: dict, query: list[str]) -> str | None:
    match query:
        case ["Where", "is", "the", obj, "?"]:
            h = world["holder"].get(obj)
            return world["loc"].get(h) if h else world["placed"].get(obj)
        case ["Where", "is", person, "?"]:
            return world["loc"].get(person)
        case ["Where", "was", "the", obj, "before", "the", place, "?"]:
            hist = world["hist"][obj]
            if place not in hist:
                return None
            assert hist.count(place) == 1, f"ambiguous question {query}: history {hist}"
            i = hist.index(place)
            return hist[i - 1] if i > 0 else None
    raise AssertionError(f"unknown question form {query}")


# --------------------------------------------------------------------------- tests


def test_generate_is_deterministic_and_seeded(tmp_path):
    cfg = {"n_train": 50, "n_dev": 10, "n_test": 10}
    for name in ("a", "b"):
        synthetic.generate(tmp_path / name, cfg)
    synthetic.generate(tmp_path / "c", {**cfg, "seed": 8})
    for split in synthetic.SPLITS:
        a = (tmp_path / "a" / f"{split}.jsonl").read_bytes()
        assert a and a == (tmp_path / "b" / f"{split}.jsonl").read_bytes()
        assert a != (tmp_path / "c" / f"{split}.jsonl").read_bytes()
    # story i depends only on (seed, split, i): more train stories leave the others unchanged
    synthetic.generate(tmp_path / "d", {**cfg, "n_train": 60})
    d_train = (tmp_path / "d" / "train.jsonl").read_bytes()
    assert d_train.startswith((tmp_path / "a" / "train.jsonl").read_bytes())
    assert (tmp_path / "d" / "dev.jsonl").read_bytes() == (
        tmp_path / "a" / "dev.jsonl"
    ).read_bytes()
    assert synthetic.sources({}) == []


def test_answers_rederived_by_independent_checker(corpus):
    _, stories = corpus
    checked = Counter()
    for story in stories:
        stmts = parse_story(story)
        replay(stmts, strict=True)  # every action in the story is possible
        for q in story["questions"]:
            context = stmts[: q["after"]]
            got = answer(replay(context, strict=True), q["query"])
            assert got == q["answer"], (story["id"], q)
            # supporting facts: k of them, sufficient alone (with gold coreference) ...
            k = int(q["task"][3])
            sup = q["supporting"]
            assert len(sup) == k == len(set(sup)) and sup == sorted(sup), (story["id"], q)
            facts = [stmts[i] for i in sup]
            assert answer(replay(facts, strict=False), q["query"]) == q["answer"], (story["id"], q)
            # ... and each one necessary
            for drop in range(k):
                rest = facts[:drop] + facts[drop + 1 :]
                assert answer(replay(rest, strict=False), q["query"]) != q["answer"], (
                    story["id"],
                    q,
                )
            # "_coref" exactly when the facts are useless without resolving a pronoun
            without = answer(replay(facts, strict=False, resolve_pronouns=False), q["query"])
            assert (without != q["answer"]) == q["task"].endswith("_coref"), (story["id"], q)
            # candidates: the places mentioned before the question, answer among them
            ctx_tokens = {t for st in context for t in st["tokens"]}
            places = sorted(p for p in synthetic.DEFAULTS["places"] if p in ctx_tokens)
            assert q["candidates"] == places and q["answer"] in places
            checked[q["task"]] += 1
    assert sum(checked.values()) > 2000


def test_gold_mentions_and_pronoun_clusters(corpus):
    _, stories = corpus
    n_pronouns = n_they = 0
    for story in stories:
        tokens = [t for sent in story["sentences"] for t in sent]
        spans = {(s, e): c for s, e, c in story["mentions"]}
        assert len(spans) == len(story["mentions"]), "duplicate mention spans"
        assert all(0 <= s < e <= len(tokens) for s, e in spans)
        assert sorted(set(spans.values())) == list(range(len(set(spans.values()))))
        # every name, "the <place/object>" is a mention; one cluster per name
        cluster_of_text = {}
        for i, t in enumerate(tokens):
            if t in GENDER:
                key = spans[(i, i + 1)]
                assert cluster_of_text.setdefault(t, key) == key
            if t == "the":
                key = spans[(i, i + 2)]
                assert cluster_of_text.setdefault(tokens[i + 1], key) == key
        assert len(set(cluster_of_text.values())) == len(cluster_of_text)
        # pronouns: same cluster as the previous statement's subject (named or itself a
        # pronoun), gender / number agree, and no other same-gender person there to confuse
        stmts = parse_story(story)
        for n, stmt in enumerate(stmts):
            if not stmt["pronoun"]:
                continue
            n_pronouns += 1
            assert n > 0
            pron = tokens[stmt["span"][0]].lower()
            assert spans[stmt["span"]] == spans[stmts[n - 1]["span"]], (story["id"], n)
            if pron == "they":
                n_they += 1
                assert len(stmt["subject"]) == 2
            else:
                (person,) = stmt["subject"]
                assert GENDER[person] == PRONOUN_GENDER[pron]
                assert cluster_of_text[person] == spans[stmt["span"]]
                others = {t for t in story["sentences"][n - 1] if t in GENDER} - {person}
                assert all(GENDER[p] != GENDER[person] for p in others), (story["id"], n)
    assert n_pronouns > 1000 and n_they > 50


def test_task_mix_covers_one_two_three_facts_and_pronoun_questions(corpus):
    _, stories = corpus
    tasks = Counter(q["task"] for s in stories for q in s["questions"])
    assert set(tasks) == {f"syn{k}{c}" for k in (1, 2, 3) for c in ("", "_coref")}
    assert min(tasks.values()) >= 80, tasks
    # the brief's example: "Mary went to the kitchen. She picked up the apple. Where is the apple?"
    examples = 0
    for story in stories:
        stmts = parse_story(story)
        for q in story["questions"]:
            if q["task"] == "syn2_coref":
                kinds = [(stmts[i]["kind"], stmts[i]["pronoun"]) for i in q["supporting"]]
                examples += kinds == [("move", False), ("pickup", True)]
    assert examples > 20


def test_normalize_round_trip(corpus):
    raw, stories = corpus
    norm = synthetic.normalize(raw, {})
    docs = to_table(DOCUMENTS, norm.documents)
    items = to_table(ITEMS, norm.items)
    mentions = to_table(MENTIONS, norm.mentions)
    check_mentions_in_range(docs, mentions)
    assert docs.num_rows == len(stories) == 520
    assert items.num_rows == sum(len(s["questions"]) for s in stories)
    assert mentions.num_rows == sum(len(s["mentions"]) for s in stories)
    assert Counter(docs.column("split").to_pylist()) == {"train": 400, "dev": 60, "test": 60}
    assert set(docs.column("genre").to_pylist()) == {"synthetic"}
    assert set(mentions.column("annotator").to_pylist()) == {"gold"}
    ids = docs.column("doc_id").to_pylist()
    assert ids == sorted(ids) and ids[0] == "synthetic/dev-00000"
    by_id = {d["doc_id"]: d for d in norm.documents}
    raw_by_id = {f"synthetic/{s['id']}": s for s in stories}
    for item in norm.items:
        doc = by_id[item["doc_id"]]
        q = raw_by_id[item["doc_id"]]["questions"][int(item["item_id"].rsplit("/q", 1)[1])]
        starts = doc["sentence_starts"] + [len(doc["tokens"])]
        assert item["context_end"] == starts[q["after"]]
        assert item["answer"] in doc["tokens"][: item["context_end"]]
        assert all(starts[i + 1] <= item["context_end"] for i in item["supporting"])
        assert item["split"] == doc["split"]
    # documents are the statements only, in order
    story = raw_by_id[ids[0]]
    assert by_id[ids[0]]["tokens"] == [t for s in story["sentences"] for t in s]


def _write_small(tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    synthetic.generate(raw, {"n_train": 5, "n_dev": 2, "n_test": 2})
    return raw


def _replace_line(path: Path, lineno: int, new: bytes) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    lines[lineno - 1] = new + b"\n"
    path.write_bytes(b"".join(lines))


def _edit(path: Path, lineno: int, fn) -> None:
    story = json.loads(path.read_text(encoding="utf-8").splitlines()[lineno - 1])
    fn(story)
    _replace_line(path, lineno, json.dumps(story).encode())


@pytest.mark.parametrize(
    ("file", "lineno", "corrupt", "message"),
    [
        (
            "train.jsonl",
            3,
            lambda p: _replace_line(p, 3, p.read_bytes().splitlines()[2][:40]),
            "not valid JSON",
        ),
        ("dev.jsonl", 2, lambda p: _replace_line(p, 2, b'{"id": "x\xff"}'), "not valid utf-8"),
        (
            "test.jsonl",
            1,
            lambda p: _edit(p, 1, lambda s: s.pop("mentions")),
            "missing field 'mentions'",
        ),
        (
            "train.jsonl",
            4,
            lambda p: _edit(p, 4, lambda s: s["mentions"].append([0, 9999, 0])),
            "outside",
        ),
        (
            "train.jsonl",
            2,
            lambda p: _edit(p, 2, lambda s: s["questions"][0].update(supporting=[99])),
            "supporting",
        ),
        (
            "train.jsonl",
            5,
            lambda p: _edit(p, 5, lambda s: s["questions"][0].pop("answer")),
            "'answer'",
        ),
        ("dev.jsonl", 2, lambda p: _edit(p, 2, lambda s: s.update(id="dev-00000")), "already used"),
        ("test.jsonl", 2, lambda p: _replace_line(p, 2, b""), "empty line"),
    ],
)
def test_malformed_raw_line_names_file_and_line(tmp_path, file, lineno, corrupt, message):
    raw = _write_small(tmp_path)
    synthetic.normalize(raw, {})  # valid before corruption
    corrupt(raw / file)
    with pytest.raises(DataError) as err:
        synthetic.normalize(raw, {})
    assert err.value.path.endswith(file) and err.value.line == lineno
    assert f"{file}:{lineno}" in str(err.value) and message in str(err.value)


def test_missing_raw_file_and_bad_settings(tmp_path):
    raw = _write_small(tmp_path)
    (raw / "dev.jsonl").unlink()
    with pytest.raises(DataError, match="dev.jsonl"):
        synthetic.normalize(raw, {})
    with pytest.raises(CorefreproError, match="people"):
        synthetic.generate(tmp_path / "x", {"people": {"Mary": "robot", "John": "male"}})
    with pytest.raises(CorefreproError, match="n_train"):
        synthetic.generate(tmp_path / "x", {"n_train": -1})
    with pytest.raises(
        CorefreproError, match=r"download\.synthetic: unknown setting\(s\) \['n_trian'\]"
    ):
        synthetic.settings({"n_trian": 3})  # a typo is refused, not run with the default


def test_group_moves_can_be_turned_off(tmp_path):
    synthetic.generate(
        tmp_path, {"n_train": 40, "n_dev": 0, "n_test": 0, "action_weights": {"group_move": 0}}
    )
    text = (tmp_path / "train.jsonl").read_text(encoding="utf-8")
    assert '"they"' not in text.lower() and '"and"' not in text
    assert (tmp_path / "dev.jsonl").read_text() == ""
    assert len(synthetic.normalize(tmp_path, {}).documents) == 40
