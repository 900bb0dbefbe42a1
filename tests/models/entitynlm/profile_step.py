"""One EntityNLM training step (the stage's: LMRecipe.step, per-model clip, Adam) profiled and
attributed to its parts (issue #57.3), in a stage-like process (imports `flows` first, so the
numeric path is pinned unless COREFREPRO_NUMERICS=native):

    python -m tests.models.entitynlm.profile_step CELL REPEATS [PROFILED]   (inscript | table1)

Prints, before and after issue #57.3's changes (`use`), the median unprofiled step and a
table of profiled steps: per part, the forward time of its torch ops, the Python time between
them, and the backward time of the autograd nodes its forward made (matched by sequence
number). Cells (synthetic documents shaped like
the presets' data, `documents`): inscript -- embed = hidden = 128, vocabulary 1,000,
batch_tokens 512, ~200-word stories with a protagonist mentioned in every sentence and many
short mentions; table1 -- 256, vocabulary 10,000, one ~1,100-word document a step (GUM /
LitBank: longer than batch_tokens, each its own batch), longer chains.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections import defaultdict

import flows  # noqa: F401  (the stage entry point: pins the numeric path)

CELLS = {  # size, vocabulary, words a document, documents a step, words a sentence, entities
    "inscript": {"size": 128, "vocab": 1000, "length": 200, "docs": 2, "sentence": 12, "ents": 10},
    "table1": {"size": 256, "vocab": 10000, "length": 1100, "docs": 1, "sentence": 20, "ents": 40},
}
PARTS = ("lm.lstm", "lm.scan", "lm.chain_loop", "lm.softmax", "lm.other", "proposal.lstm",
         "proposal.scan", "proposal.chain_loop", "proposal.other", "clip", "optimizer")  # fmt: skip


def documents(cell: str, count: int, seed: int = 0):
    """Synthetic annotated documents shaped like the cell's corpus: sentences of ~`sentence`
    words; entity 0 (the protagonist, InScript's "I") in most sentences; the others mentioned
    2-8 times each; mentions of 1-3 words; ~30 % mention words; Zipfian words."""
    from models.entitynlm.data import Document

    c = CELLS[cell]
    rng = random.Random(seed)
    weights = [1 / (i + 1) for i in range(c["vocab"] - 2)]
    docs = []
    for k in range(count):
        tokens, is_m, ent, rem, starts = [], [], [], [], []
        seen = 0
        while len(tokens) < c["length"]:
            starts.append(len(tokens))
            words = rng.randint(c["sentence"] // 2, c["sentence"] * 3 // 2)
            end = len(tokens) + words
            while len(tokens) < end:
                if rng.random() < 0.16:
                    e = 0 if rng.random() < 0.4 else rng.randrange(min(seen + 1, c["ents"]))
                    seen = max(seen, e + 1)
                    ell = 1 if e == 0 else rng.choice((1, 2, 2, 3))
                    for i in range(ell):
                        is_m.append(True), ent.append(e), rem.append(ell - i)
                    tokens += [None] * ell
                else:
                    is_m.append(False), ent.append(-1), rem.append(0)
                    tokens.append(None)
        n = c["length"]
        words = [f"w{i}" for i in rng.choices(range(c["vocab"] - 2), weights, k=n)]
        rem = [min(r, n - i) for i, r in enumerate(rem[:n])]
        docs.append(Document(f"d{k}", "train", words, is_m[:n], ent[:n], rem,
                             [s for s in starts if s < n]))  # fmt: skip
    return docs


def recipe_step(cell: str, seed: int = 0, **model):
    """(step(), recipe): the stage's training step (LMRecipe) at the cell's sizes; model:
    other ModelSettings (e.g. lstm_scope)."""
    import torch

    from models.entitynlm.data import collate
    from models.entitynlm.train import LMRecipe, ModelSettings, TrainSettings
    from tests.models.entitynlm.helpers import vocab_of

    c = CELLS[cell]
    torch.manual_seed(seed)
    docs = documents(cell, 4 * c["docs"], seed)
    vocab = vocab_of(c["vocab"])
    mcfg = ModelSettings(embed_dim=c["size"], hidden_size=c["size"], **model)
    tcfg = TrainSettings(lr=1e-3, batch_tokens=512)
    recipe = LMRecipe("entitynlm", {"train": docs, "dev": [], "test": []}, vocab, mcfg, tcfg)
    optimizer, _ = recipe.optimizer()
    batches = [collate(docs[i : i + c["docs"]], vocab) for i in range(0, len(docs), c["docs"])]
    recipe.model.train()
    turn = iter(range(10**9))
    params = [p for g in optimizer.param_groups for p in g["params"]]

    def step() -> None:
        from torch.profiler import record_function

        optimizer.zero_grad(set_to_none=True)
        out = recipe.step(batches[next(turn) % len(batches)], torch.device("cpu"))
        with record_function("part:backward"):
            out.loss.backward()
        with record_function("part:clip"):
            recipe.clip_gradients(5.0, params)
        with record_function("part:optimizer"):
            optimizer.step()

    return step, recipe


def instrument() -> None:
    """Label the parts of EntityNLM's forward (record_function ranges, `part:<model>.<part>`)."""
    from torch.profiler import record_function

    from models.entitynlm import model as m

    def wrap(cls, name, part):
        inner = getattr(cls, name)

        def wrapped(self, *args, **kwargs):
            who = "proposal" if self.config.proposal else "lm"
            with record_function(f"part:{who}.{part}"):
                return inner(self, *args, **kwargs)

        setattr(cls, name, wrapped)

    wrap(m.EntityNLM, "token_log_probs", "other")
    wrap(m.EntityNLM, "contexts", "lstm")
    wrap(m.EntityNLM, "_mention_scan", "scan")
    wrap(m.EntityNLM, "word_log_probs", "softmax")
    use("after")  # both chain scans labelled, whichever `use` installs later
    wrap(m.EntityNLM, "_chain_states_after", "chain_loop")
    m.EntityNLM._chain_states_before = _chain_states_before
    wrap(m.EntityNLM, "_chain_states_before", "chain_loop")


def attribute(prof) -> dict[str, dict[str, float]]:
    """Per label: fwd_ops (torch ops under the label, its own ranges not nested in another
    label), fwd_python (the label's time between its ops), bwd (backward nodes of the ops its
    forward made), in ms; plus backward engine time matched to no label."""
    events = prof.events()
    label_of_seq: dict[int, str] = {}
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    def label_of(ev):
        p = ev
        while p is not None:
            if p.name.startswith("part:"):
                return p.name[5:]
            p = p.cpu_parent
        return "untagged"

    for ev in events:
        if ev.name.startswith("part:"):
            label = ev.name[5:]
            if label == "backward":
                continue
            out[label]["fwd_python"] += ev.self_cpu_time_total / 1e3
            for ch in ev.cpu_children:
                if not ch.name.startswith("part:"):
                    out[label]["fwd_ops"] += ch.cpu_time_total / 1e3
        if ev.sequence_nr >= 0 and not ev.name.startswith("autograd::engine"):
            label_of_seq.setdefault(ev.sequence_nr, label_of(ev))
    for ev in events:
        if ev.name.startswith("autograd::engine::evaluate_function"):
            # the backward node of the forward op with its sequence number
            out[label_of_seq.get(ev.sequence_nr, "untagged")]["bwd"] += ev.cpu_time_total / 1e3
    return out


VARIANTS = ("before", "after")


def use(variant: str) -> None:
    """Switch this process to the code path of *variant*: before issue #57.3's changes (torch's
    own packed LSTM kernel; the chain scan copying the finished chains' rows at every step) or
    after (models/sequences.py `packed_lstm`; `EntityNLM._chain_states`)."""
    import models.sequences as seq
    from models.entitynlm.model import EntityNLM

    seq.USE_PACKED_LSTM = variant == "after"
    if not hasattr(EntityNLM, "_chain_states_after"):
        EntityNLM._chain_states_after = EntityNLM._chain_states
    before = getattr(EntityNLM, "_chain_states_before", _chain_states_before)
    EntityNLM._chain_states = EntityNLM._chain_states_after if variant == "after" else before


def _chain_states_before(self, prior, hu, ph, rows, count):
    """`EntityNLM._chain_states` before issue #57.3 (the reference of the bit-for-bit test)."""
    import torch

    c_all, steps = rows.shape
    h = prior.size(-1)
    order = torch.argsort(count, descending=True, stable=True)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(c_all, device=order.device)
    alive = (count[:, None] > torch.arange(steps, device=count.device)).sum(0).tolist()
    rows = rows[order].T
    packed = torch.cat([rows[s, :live] for s, live in enumerate(alive)]) if steps else None
    if steps:
        hu, ph = hu[packed].split(alive), ph[packed].split(alive)
    state = prior[order]
    pieces = [prior.new_zeros(1, h), state]
    for s, live in enumerate(alive):
        e_new = self.gate_update(state[:live], hu[s], ph[s]).to(state.dtype)
        pieces.append(e_new)
        state = torch.cat([e_new, state[live:]]) if live < c_all else e_new
    table = torch.cat(pieces)
    starts = torch.tensor([1, *(1 + c_all + sum(alive[:s]) for s in range(steps))],
                          device=count.device)  # fmt: skip

    def at(c, s):
        return starts[s.clamp(max=steps)] + rank[c]

    return table, at


def profile_parts(step, steps: int) -> dict[str, dict[str, float]]:
    """Per part and column, the median over *steps* profiled steps (ms)."""
    from torch.profiler import ProfilerActivity, profile

    runs = []
    for _ in range(steps):
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            step()
        runs.append(attribute(prof))
    labels = {k for r in runs for k in r}
    return {k: {c: statistics.median(r.get(k, {}).get(c, 0.0) for r in runs)
                for c in ("fwd_ops", "fwd_python", "bwd")} for k in labels}  # fmt: skip


def main(cell: str, repeats: int, profiled: int = 3) -> None:
    """Both variants in this process, their steps alternating (load from other work hits
    both alike): the median CPU time (process_time) and wall time of a step, then per part the
    median of `profiled` profiled steps."""
    import torch

    torch.set_num_threads(1)
    instrument()
    steps = {}
    for v in VARIANTS:
        use(v)
        steps[v], _ = recipe_step(cell)
        steps[v]()  # warm-up
    cpu, wall = defaultdict(list), defaultdict(list)
    for _ in range(repeats):
        for v in VARIANTS:
            use(v)
            c0, w0 = time.process_time(), time.perf_counter()
            steps[v]()
            cpu[v].append(time.process_time() - c0)
            wall[v].append(time.perf_counter() - w0)
    parts = {}
    for v in VARIANTS:
        use(v)
        parts[v] = profile_parts(steps[v], profiled)
    med = {v: (statistics.median(cpu[v]), statistics.median(wall[v])) for v in VARIANTS}
    print(f"{cell}: {torch.get_num_threads()} thread, {repeats} alternating steps each, medians")
    print("| | before | after | before / after |\n|---|---|---|---|")
    for i, name in enumerate(("CPU time a step (s)", "wall time a step (s)")):
        b, a = med["before"][i], med["after"][i]
        print(f"| {name} | {b:.4f} | {a:.4f} | {b / a:.2f} |")
    print(
        f"\nper part, ms (median of {profiled} profiled steps; forward ops / forward Python "
        "between ops / backward nodes of the part's forward ops)"
    )
    print(
        "| part | before: fwd ops / py / bwd | before sum | after: fwd ops / py / bwd "
        "| after sum |\n|---|---|---|---|---|"
    )
    labels = sorted(set(parts["before"]) | set(parts["after"]),
                    key=lambda k: -sum(parts["before"].get(k, {}).values()))  # fmt: skip
    totals = dict.fromkeys(VARIANTS, 0.0)
    cells = []
    for label in labels:
        row = [label]
        for v in VARIANTS:
            x = parts[v].get(label, {"fwd_ops": 0.0, "fwd_python": 0.0, "bwd": 0.0})
            totals[v] += sum(x.values())
            row += [f"{x['fwd_ops']:.1f} / {x['fwd_python']:.1f} / {x['bwd']:.1f}",
                    f"{sum(x.values()):.1f}"]  # fmt: skip
        cells.append(row)
    for row in cells:
        print("| " + " | ".join(row) + " |")
    print(f"| all | | {totals['before']:.1f} | | {totals['after']:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 3)
