"""Tiny documents, random models and the exact enumeration of (R, E, L) for the EntityNLM tests."""

from __future__ import annotations

import itertools
import random

import torch

from models.entitynlm.data import Batch, Document, Vocab, collate
from models.entitynlm.model import EntityNLM, EntityNLMConfig

# the authors' variants of the model (model.py DISTANCE_FEATURES, NEW_ENTITIES, ENTITY_INPUTS),
# each beside the default in the tests that pin the fast paths to the reference
AUTHORS_VARIANTS = {
    "sentence_exp": {"distance_feature": "sentence_exp"},
    "learned_new": {"new_entity": "learned"},
    "projected": {"entity_input": "projected"},
}


def random_model(vocab_size=5, *, proposal=False, bidirectional=True, l_max=3, seed=0, scale=1.0,
                 lstm_scope="sentence", **variant):  # fmt: skip
    """A random model in eval mode; `scale` spreads the weights so its distributions are far
    from uniform (a test of the estimator on a non-trivial P and Q); variant: EntityNLMConfig's
    authors' settings (AUTHORS_VARIANTS)."""
    torch.manual_seed(seed)
    cfg = EntityNLMConfig(vocab_size=vocab_size, embed_dim=6, hidden_size=8, l_max=l_max,
                          proposal=proposal, bidirectional=bidirectional,
                          lstm_scope=lstm_scope, **variant)  # fmt: skip
    model = EntityNLM(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(scale)
        model.w_dist.weight.normal_(0, scale)
        if cfg.distance_feature == "sentence_exp":  # far from its 1e-6 start: the term matters
            model.lambda_dist.fill_(0.7 * scale)
    return model.eval()


def doc(tokens, annotation, doc_id="d", sentence_starts=(0,)):
    """Document from words and a list of (R, E, L) per word."""
    return Document(doc_id, "test", list(tokens), [bool(a[0]) for a in annotation],
                    [a[1] for a in annotation], [a[2] for a in annotation],
                    list(sentence_starts))  # fmt: skip


def configurations(length: int, l_max: int):
    """Every (R, E, L) sequence of `length` words the generative story allows (§2.2), a
    mention possibly running past the last word (prefix semantics)."""

    def extend(prefix, prev_rem, prev_ent, n_ent):
        if len(prefix) == length:
            yield prefix
            return
        if prev_rem > 1:
            yield from extend([*prefix, (1, prev_ent, prev_rem - 1)], prev_rem - 1, prev_ent,
                              n_ent)  # fmt: skip
            return
        yield from extend([*prefix, (0, -1, 0)], 0, -1, n_ent)
        for e in range(n_ent + 1):
            for ell in range(1, l_max + 1):
                yield from extend([*prefix, (1, e, ell)], ell, e, max(n_ent, e + 1))

    yield from extend([], 0, -1, 0)


def vocab_of(size: int) -> Vocab:
    return Vocab(["<pad>", "unk", *[f"w{i}" for i in range(size - 2)]])


def enumeration_batch(word_ids, l_max, sentence_starts=(0,)) -> tuple[Batch, list]:
    """One row per configuration of the words `word_ids` (ids, not strings)."""
    vocab = vocab_of(max(word_ids) + 1 if max(word_ids) >= 2 else 2)
    configs = list(configurations(len(word_ids), l_max))
    docs = [doc([vocab.words[i] for i in word_ids], c, f"c{k}", sentence_starts)
            for k, c in enumerate(configs)]  # fmt: skip
    batch = collate(docs, vocab)
    batch.tokens = torch.tensor([list(word_ids)] * len(configs))  # ids 0/1 kept as is
    return batch, configs


def all_word_sequences(vocab_size: int, length: int):
    return list(itertools.product(range(vocab_size), repeat=length))


def random_documents(seed, count=5, max_len=14, l_max=3, sentences=False) -> list[Document]:
    """Random annotations the story allows; a mention may run past the last word (and, with
    `sentences`, across a sentence start); sentences: random sentence starts, else one."""
    rng = random.Random(seed)
    cut = random.Random(seed + 1000)  # its own stream: the annotations stay as without
    docs = []
    for k in range(count):
        length = rng.randint(1, max_len)
        is_m, ent, rem, n = [], [], [], 0
        while len(is_m) < length:
            if rng.random() < 0.45:
                e = rng.randrange(n + 1)
                n = max(n, e + 1)
                ell = rng.randint(1, l_max)
                is_m += [True] * ell
                ent += [e] * ell
                rem += list(range(ell, 0, -1))
            else:
                is_m.append(False), ent.append(-1), rem.append(0)
        tokens = [f"w{rng.randrange(5)}" for _ in range(length)]
        starts = [0, *(t for t in range(1, length) if sentences and cut.random() < 0.3)]
        docs.append(Document(f"r{k}", "test", tokens, is_m[:length], ent[:length], rem[:length],
                             starts))  # fmt: skip
    return docs
