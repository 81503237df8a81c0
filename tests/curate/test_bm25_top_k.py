"""BM25Retriever's batched top-k: the same hits, order and scores as bm25s's own `BM25.retrieve`."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import bm25s
import bm25s.selection
import numpy as np
import pytest

from livemed.evidence import load_medquad
from livemed.evidence.bm25 import BM25Retriever, _tokenize, top_k
from livemed.evidence.corpus import Passage


def _bm25s_hits(retriever: BM25Retriever, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
    """What bm25s gives for the queries, called the way it documents it (positive scores kept)."""
    tokenized = _tokenize(queries)
    asked = [i for i, words in enumerate(tokenized) if words]
    found: list[list[tuple[int, float]]] = [[] for _ in queries]
    k = min(k, len(retriever.passages))
    indices, scores = retriever._bm25.retrieve([tokenized[i] for i in asked], k=k, show_progress=False)
    for row, i in enumerate(asked):
        found[i] = [(int(a), float(s)) for a, s in zip(indices[row], scores[row], strict=True) if s > 0]
    return found


def _counting_topk(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """bm25s's own `selection.topk`, counted (the rows handed to it for their tie order)."""
    calls: list[int] = []
    real = bm25s.selection.topk

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(bm25s.selection, "topk", counted)
    return calls


def _passages(texts: list[str]) -> list[Passage]:
    return [Passage(id=f"p{i}", text=text) for i, text in enumerate(texts)]


def test_top_k_equals_bm25s_with_tied_passages_and_hands_only_tied_rows_to_bm25s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # duplicates score the same: ties inside the top 3 and at its edge (the 3rd equal to the 4th)
    texts = [
        "penicillin allergy rash hives",
        "penicillin allergy rash hives",
        "amoxicillin is a penicillin",
        "amoxicillin is a penicillin",
        "amoxicillin is a penicillin",
        "fluids and rest for a sore throat",
        "sore throat with fever",
        "fever in children and fluids",
    ]
    retriever = BM25Retriever(_passages(texts))
    queries = [
        "penicillin allergy",  # two tied best, then the three tied amoxicillin passages
        "amoxicillin",  # three tied: all of the top 3
        "sore throat fever",  # no ties
        "zebra",  # no hits
        "fluids",
    ]
    expected = _bm25s_hits(retriever, queries, 3)
    calls = _counting_topk(monkeypatch)
    assert retriever.hits(queries, k=3) == expected
    assert len(calls) == 2  # the two queries with tied positive scores, not the others
    assert len(expected[1]) == 3
    assert len({score for _, score in expected[1]}) == 1
    assert expected[3] == []
    for k in (1, 2, 7, 8, 20):  # 8 and 20: k + 1 above the corpus size, every row to bm25s
        assert retriever.hits(queries, k=k) == _bm25s_hits(retriever, queries, k), k


def test_top_k_leaves_the_scores_as_they_were_and_orders_best_first() -> None:
    rng = np.random.default_rng(13)
    scores = rng.random((50, 40), dtype=np.float32)
    scores[:, 5] = 0
    before = scores.copy()
    indices, values = top_k(scores, 3)
    assert np.array_equal(scores, before)
    assert np.array_equal(values, np.take_along_axis(before, indices, axis=1))
    assert np.array_equal(values, -np.sort(-before, axis=1)[:, :3])


def test_hits_across_several_blocks_of_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    import livemed.evidence.bm25 as bm25_module

    texts = [f"passage {i} about {'fever' if i % 2 else 'cough'} and word{i % 7}" for i in range(30)]
    retriever = BM25Retriever(_passages(texts))
    queries = [f"fever word{i % 7}" for i in range(25)] + ["cough", "", "word3 cough"]
    monkeypatch.setattr(bm25_module, "BLOCK_FLOATS", 30 * 4)  # 4 queries a block
    assert retriever.hits(queries, k=3) == _bm25s_hits(retriever, queries, 3)


@pytest.mark.shared_data
def test_hits_equal_bm25s_retrieve_for_medquad_questions_over_the_whole_corpus(
    shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shared_data / "medquad" / "medquad_answered_pairs.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        questions = sorted({str(json.loads(line)["question"]) for line in handle})[::3]
    assert len(questions) > 4_900  # a third of the 14,979 distinct questions (all of them: ~10 s more)
    retriever = BM25Retriever(load_medquad(path))
    expected = _bm25s_hits(retriever, questions, 3)
    calls = _counting_topk(monkeypatch)
    assert retriever.hits(questions, k=3) == expected
    assert 0 < len(calls) < len(questions) // 20  # some real ties (~1%), left to bm25s


def test_batched_searches_run_with_the_collector_out_of_the_way() -> None:
    """`hits` and `search_many` run inside `heap.fewer_collections` (the corpus frozen, young
    collections every GC_YOUNG allocations), whoever calls them, and leave the collector as it was."""
    import gc

    from livemed.common.heap import GC_YOUNG

    passages = [Passage(id=f"p{i}", title="", text=f"Fever and cough number {i}. Rest.") for i in range(5)]
    retriever = BM25Retriever(passages)
    seen: list[tuple[int, int]] = []
    real = retriever._bm25.get_scores

    def watched(words: Any) -> Any:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        return real(words)

    retriever._bm25.get_scores = watched
    before = gc.get_threshold()
    refs = retriever.search_many(["fever cough"], k=2)
    assert [len(found) for found in refs] == [2]
    assert seen
    assert all(frozen > 0 and young == max(GC_YOUNG, before[0]) for frozen, young in seen)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
