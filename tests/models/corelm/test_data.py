"""Word-level entity spans on subword tokens; tokenizers (papers/003 §4.1)."""

from __future__ import annotations

import pytest

from models.corelm.data import align, build_instances, to_blocks


def test_entity_ids_follow_words_onto_their_subwords(tiny):
    words = ["Mary", "travelled", "to", "the", "kitchenette", "."]
    ids, ents = align(tiny.tokenizer, words, [7, 0, 0, 3, 3, 0])
    assert len(ids) > len(words)  # some words are split
    pieces = [tiny.tokenizer.decode([i]) for i in ids]
    assert "".join(pieces) == " ".join(words)
    text, pos, labels = " ".join(words), 0, [7, 0, 0, 3, 3, 0]
    for piece, e in zip(pieces, ents, strict=True):
        first_char = pos + len(piece) - len(piece.lstrip(" "))
        expected = labels[text[:first_char].count(" ")] if piece.strip() else 0  # a lone space
        assert e == expected, (piece, e)
        pos += len(piece)


def test_one_instance_per_layer_and_blocks_predict_each_token_once(tiny):
    docs = [{"doc_id": "d", "split": "train", "tokens": ["the", "cake", "for", "Sam"]}]
    view = [
        {"doc_id": "d", "layer": 0, "split": "train", "entity_ids": [1, 1, 1, 1]},
        {"doc_id": "d", "layer": 1, "split": "train", "entity_ids": [0, 0, 0, 2]},
    ]
    inst = build_instances(tiny.tokenizer, docs, view, id_offset=10)
    assert [i.layer for i in inst] == [0, 1] and inst[0].ids == inst[1].ids
    assert set(inst[0].entities) - {0} == {11} and inst[1].entities[-1] == 12
    blocks = to_blocks(inst[:1], bos_id=0, block_size=3)
    predicted = sum(len(b) - 1 for b in blocks.ids)
    assert predicted == len(inst[0].ids) and blocks.ids[0][0] == 0


@pytest.mark.mirror
def test_gpt2_tokenizer_matches_tiktoken(mirror):
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    from tiktoken_ext.openai_public import ENDOFTEXT, r50k_pat_str

    from models.corelm.backbone import gpt2_tokenizer

    bpe = mirror / "gpt2_bpe"
    ranks = data_gym_to_mergeable_bpe_ranks(str(bpe / "vocab.bpe"), str(bpe / "encoder.json"))
    enc = tiktoken.Encoding("gpt2", pat_str=r50k_pat_str, mergeable_ranks=ranks,
                            special_tokens={ENDOFTEXT: 50256})  # fmt: skip
    tok = gpt2_tokenizer(mirror=mirror)
    text = (mirror / "wikitext2" / "wiki.valid.tokens").read_text()[:30000]
    text += " “Curly” quotes, ünïcödé, 12,345.6 and  double  spaces\n\n"
    assert len(tok) == 50257
    assert tok(text)["input_ids"] == enc.encode(text)
    assert tok.decode(tok(text)["input_ids"]) == text


def test_words_are_located_in_a_released_text_with_its_own_whitespace():
    """LAMBADA's jsonl keeps line breaks: entities are aligned on that string (#28)."""
    from models.corelm.data import locate_words
    from tasks.core.errors import CorefreproError

    assert locate_words("a  bc\n\nd", ["a", "bc", "d"]) == [0, 3, 7]
    with pytest.raises(CorefreproError):
        locate_words("a x bc", ["a", "bc"])  # a word between them
