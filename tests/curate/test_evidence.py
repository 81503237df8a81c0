"""Evidence retrieval: corpora, BM25 on disk, MedQuAD, Europe PMC over HTTP, dense with a fake encoder."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from livemed.errors import ConfigError, InputFileError, MissingDependencyError
from livemed.evidence import NoEvidence, RetrievalError, Retriever, load_corpus, load_medquad, snippet
from livemed.evidence.bm25 import BM25Retriever
from livemed.evidence.dense import DenseRetriever, sentence_transformer
from livemed.evidence.europepmc import EuropePMCRetriever
from livemed.evidence.factory import build_retriever, detect_format
from livemed.sources.europepmc import Settings as EuropePMCSettings
from tests.curate.conftest import PASSAGES
from tests.fakes.europepmc import FakeEuropePMC, europepmc_server

FAST_EPMC = EuropePMCSettings(max_retries=2, backoff_base_s=0.01, requests_per_second=9.5)


def test_load_corpus_reads_passages_and_names_bad_lines(tmp_path: Path, corpus_file: Path) -> None:
    assert [p.id for p in load_corpus(corpus_file)] == [p.id for p in PASSAGES]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "a", "text": "ok"}) + "\n" + json.dumps({"id": "b"}) + "\n")
    with pytest.raises(InputFileError, match=r"bad.jsonl:2: text"):
        load_corpus(bad)
    bad.write_text("{not json\n")
    with pytest.raises(InputFileError, match=r"bad.jsonl:1: invalid JSON"):
        load_corpus(bad)


async def test_bm25_finds_supporting_passages_and_persists_its_index(tmp_path: Path) -> None:
    retriever = BM25Retriever(PASSAGES, cache_dir=tmp_path)
    assert isinstance(retriever, Retriever)
    assert not retriever.loaded_from_disk
    hits = await retriever.search("avoid amoxicillin with a penicillin allergy", k=2)
    assert hits[0].id == "ev:penicillin"
    assert "amoxicillin" in hits[0].snippet
    assert hits[0].score > 0
    assert await retriever.search("zebra unicorn") == []  # no overlap is no evidence
    again = BM25Retriever(PASSAGES, cache_dir=tmp_path)
    assert again.loaded_from_disk
    assert again.index_dir == retriever.index_dir
    assert [h.id for h in await again.search("avoid amoxicillin", k=1)] == ["ev:penicillin"]
    changed = BM25Retriever(PASSAGES[:2], cache_dir=tmp_path)
    assert not changed.loaded_from_disk
    assert changed.index_dir != retriever.index_dir


def test_snippet_picks_the_best_sentences() -> None:
    text = "Alpha beta. Fluids and rest help. Gamma delta. Epsilon."
    assert snippet(text, "rest and fluids") == "Alpha beta. Fluids and rest help."


@pytest.mark.shared_data
async def test_medquad_loads_and_retrieves(shared_data: Path, tmp_path: Path) -> None:
    path = shared_data / "medquad" / "medquad_answered_pairs.jsonl.gz"
    assert detect_format(path) == "medquad"
    passages = load_medquad(path)
    assert len(passages) == 15809  # distinct answers, per SOURCE.md
    assert passages[0].id.startswith("medquad:")
    assert passages[0].licence == "CC BY 4.0"
    assert passages[0].url
    subset = [p for p in passages if "Leukemia" in p.title][:300]
    hits = await BM25Retriever(subset).search(
        "signs of acute lymphoblastic leukemia: fever and easy bruising"
    )
    assert hits
    assert "bruising" in hits[0].snippet.lower()


async def test_europepmc_over_http(tmp_path: Path) -> None:
    results: list[dict[str, Any]] = [
        {
            "id": "123",
            "source": "MED",
            "pmid": "123",
            "title": "Pharyngitis",
            "abstractText": "<h4>Results</h4><p>Rest and <i>fluids</i> help.</p><p>Other.</p>",
            "isOpenAccess": "N",
            "inEPMC": "N",
            "pubTypeList": {"pubType": ["Journal Article"]},
            "firstPublicationDate": "2024-05-01",
        },
        {"id": "PMC456", "source": "PMC", "pmcid": "PMC456", "title": "No abstract", "inEPMC": "Y"},
    ]
    with europepmc_server(FakeEuropePMC(results=results, failures=1)) as fake:
        retriever = EuropePMCRetriever(base_url=fake.base_url, settings=FAST_EPMC)
        hits = await retriever.search("fluids and rest for sore throat", k=2)
    assert len(fake.requests) == 2  # the 503 was retried by the sources' HttpClient
    assert all(agent.startswith("livemed/") for agent in fake.user_agents)
    assert [h.id for h in hits] == ["europepmc:MED:123"]
    assert hits[0].url == "https://europepmc.org/article/MED/123"
    assert "Rest and fluids help." in hits[0].snippet  # inline HTML stripped
    assert "<" not in hits[0].snippet
    assert fake.requests[0]["query"] == ["fluids OR rest OR sore OR throat"]
    assert fake.requests[0]["format"] == ["json"]
    assert fake.requests[0]["pageSize"] == ["2"]


async def test_europepmc_query_is_the_advice_content_words_joined_by_or_without_lucene_syntax() -> None:
    advice = (
        'Patients on "warfarin" (anticoagulants) should NOT take ibuprofen: bleeding risk [AND] '
        "kidney-injury risk rise!? title:NSAID* ~2 ^3 {a TO b} \\ / && || 400 mg"
    )
    results = [{"id": "9", "source": "MED", "abstractText": "Warfarin and ibuprofen raise bleeding risk."}]
    with europepmc_server(FakeEuropePMC(results=results)) as fake:
        retriever = EuropePMCRetriever(base_url=fake.base_url, settings=FAST_EPMC, open_access_only=True)
        hits = await retriever.search(advice, k=3)
        assert await retriever.search("Do not do it, and do not do that.") == []  # stop words only
    assert [h.id for h in hits] == ["europepmc:MED:9"]
    [query] = fake.requests[0]["query"]  # the 8 longest content words, in order; "take", "rise" left out
    terms = "patients OR warfarin OR anticoagulants OR ibuprofen OR bleeding OR kidney OR injury OR title"
    assert query == f"({terms}) AND OPEN_ACCESS:y"
    searched = query.removesuffix(" AND OPEN_ACCESS:y")[1:-1]
    assert not any(ch in searched for ch in '"():[]{}*~^\\/&|!?+-')
    assert len(fake.requests) == 1  # nothing was sent for the stop-word advice


async def test_europepmc_failure_is_a_retrieval_error_and_counted() -> None:
    with europepmc_server(FakeEuropePMC(status=503)) as fake:
        retriever = EuropePMCRetriever(base_url=fake.base_url, settings=FAST_EPMC)
        with pytest.raises(RetrievalError, match="503"):
            await retriever.search("anything")
    assert len(retriever.errors) == 1
    assert "503" in retriever.errors[0]


async def test_europepmc_errcode_body_is_a_retrieval_error() -> None:
    err = {"errCode": 404, "errMsg": "No search criteria provided."}
    with europepmc_server(FakeEuropePMC(err=err)) as fake:
        retriever = EuropePMCRetriever(base_url=fake.base_url, settings=FAST_EPMC)
        with pytest.raises(RetrievalError, match="errCode 404"):
            await retriever.search("anything")
    assert len(fake.requests) == 1
    assert "No search criteria" in retriever.errors[0]


class FakeEncoder:
    """Bag-of-words vectors over a tiny vocabulary: similar words, similar vectors."""

    vocabulary = ("fluids", "rest", "amoxicillin", "penicillin", "aspirin", "statin")

    def encode(self, texts: Sequence[str]) -> Any:
        return np.array([[t.lower().count(w) for w in self.vocabulary] for t in texts], dtype=float)


async def test_dense_retrieval_with_a_fake_encoder() -> None:
    retriever = DenseRetriever(PASSAGES, FakeEncoder(), min_score=0.5)
    hits = await retriever.search("is amoxicillin safe with penicillin allergy", k=3)
    assert [h.id for h in hits] == ["ev:penicillin"]
    assert await retriever.search("completely unrelated words") == []


def test_dense_without_the_extra_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def blocked(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("sentence_transformers"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", blocked)
    with pytest.raises(MissingDependencyError, match=r"livemed\[dense\]"):
        sentence_transformer("any/model")


def test_build_retriever(tmp_path: Path, corpus_file: Path) -> None:
    assert isinstance(build_retriever("none", evidence=None), NoEvidence)
    bm25 = build_retriever("bm25", evidence=str(corpus_file), index_dir=tmp_path)
    assert isinstance(bm25, BM25Retriever)
    assert len(bm25.passages) == len(PASSAGES)
    with pytest.raises(ConfigError, match="--evidence"):
        build_retriever("bm25", evidence=None)
    with pytest.raises(ConfigError, match="dense_model"):
        build_retriever("dense", evidence=str(corpus_file))


def test_live_search_uses_the_europepmc_source_settings() -> None:
    from livemed.evidence.europepmc import EuropePMCRetriever
    from livemed.evidence.factory import build_retriever
    from livemed.sources.europepmc import Settings

    mirror = Settings(base_url="http://127.0.0.1:9/rest/", requests_per_second=2, max_retries=1)
    retriever = build_retriever("europepmc", evidence=None, europepmc=mirror)
    assert isinstance(retriever, EuropePMCRetriever)
    assert retriever.base_url == "http://127.0.0.1:9/rest"
    assert (retriever.settings.requests_per_second, retriever.settings.max_retries) == (2, 1)


async def test_bm25_batched_search_equals_one_search_per_query(tmp_path: Path) -> None:
    retriever = BM25Retriever(PASSAGES, cache_dir=tmp_path)
    queries = [
        "avoid amoxicillin with a penicillin allergy",
        "zebra unicorn",
        "the of and",
        "fluids and rest",
    ]
    one_by_one = [retriever.search_sync(query, k=2) for query in queries]
    retriever._sentences.clear()
    assert retriever.search_many(queries, k=2) == one_by_one
    assert await retriever.search_batch(queries, k=2) == one_by_one  # snippets from the passage cache
    assert one_by_one[1] == []
    assert one_by_one[2] == []
    assert [[PASSAGES[i].id for i, _ in found] for found in retriever.hits(queries, k=2)] == [
        [ref.id for ref in refs] for refs in one_by_one
    ]


async def test_search_all_makes_one_batched_call_where_the_retriever_has_one(tmp_path: Path) -> None:
    from livemed.evidence import search_all

    calls: list[list[str]] = []

    class Counting(BM25Retriever):
        async def search_batch(self, queries: list[str], *, k: int = 3) -> list[list[Any]]:
            calls.append(queries)
            return await super().search_batch(queries, k=k)

        async def search(self, query: str, *, k: int = 3) -> list[Any]:
            raise AssertionError("one search per query")

    retriever = Counting(PASSAGES, cache_dir=tmp_path)
    found = await search_all(retriever, ["avoid amoxicillin", "fluids and rest"], 2)
    assert calls == [["avoid amoxicillin", "fluids and rest"]]
    assert found == [
        retriever.search_sync("avoid amoxicillin", k=2),
        retriever.search_sync("fluids and rest", k=2),
    ]


def test_the_cached_sentence_split_gives_the_same_snippets_as_the_text() -> None:
    from livemed.evidence.corpus import Sentences

    text = "Alpha beta. Fluids and rest help! Gamma delta?  Epsilon rest.\nZeta fluids."
    split = Sentences(text)
    for query in ["rest and fluids", "gamma", "zeta fluids", "nothing here", ""]:
        windows = [" ".join(split.sentences[i : i + 2]) for i in range(len(split.sentences))]
        words = [
            set(w.lower().replace(".", " ").replace("!", " ").replace("?", " ").split()) for w in windows
        ]
        wanted = {w for w in query.lower().split() if len(w) >= 3}
        best = max(range(len(windows)), key=lambda i: (len(wanted & words[i]), -i))
        assert split.snippet(query) == snippet(text, query) == windows[best]


def _reference_snippet(text: str, query: str, max_chars: int = 400) -> str:
    """The snippet as first defined: split at whitespace after . ! ?, tokenise every sentence, take the
    first two-sentence window sharing the most query words."""
    import re

    from livemed.evidence.corpus import tokens

    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    if not sentences:
        return text[:max_chars]
    wanted = tokens(query)
    words = [wanted & tokens(s) for s in sentences] + [set()]
    best = max(range(len(sentences)), key=lambda i: (len(words[i] | words[i + 1]), -i))
    window = " ".join(sentences[best : best + 2])
    return window if len(window) <= max_chars else window[: max_chars - 1].rstrip() + "…"


def test_snippets_equal_the_reference_definition_on_random_text() -> None:
    import random

    from livemed.evidence.corpus import Sentences

    rng = random.Random(13)
    # sentence marks, ASCII and Unicode whitespace (\x1c and U+2028 are whitespace to str and re),
    # word and non-word characters, and characters whose lower case differs in length (İ) or is ASCII (K)
    alphabet = list("abc AB.!?  \n\t\x1c\u00a0\u2028xyz019_-'İßéK,;")
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        query = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        expected = _reference_snippet(text, query, max_chars=30)
        assert snippet(text, query, max_chars=30) == expected, (text, query)
        assert Sentences(text).snippet(query, max_chars=30) == expected, (text, query)


@pytest.mark.shared_data
async def test_bm25_snippets_equal_the_reference_definition_on_medquad(shared_data: Path) -> None:
    import gzip

    path = shared_data / "medquad" / "medquad_answered_pairs.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        pairs = [json.loads(line) for line in handle][:3000]
    questions = [str(pair["question"]) for pair in pairs]
    passages = [p for p in load_medquad(path) if "Diabetes" in p.title or "Leukemia" in p.title][:400]
    retriever = BM25Retriever(passages)
    found = retriever.search_many(questions[:500], k=3)
    by_id = {p.id: p.text for p in passages}
    assert sum(map(len, found)) > 300
    for query, refs in zip(questions, found, strict=False):
        for ref in refs:
            assert ref.snippet == _reference_snippet(by_id[ref.id], query)
    for pair, question in zip(pairs[:2000], reversed(questions), strict=False):
        assert snippet(pair["answer"], pair["question"]) == _reference_snippet(
            pair["answer"], pair["question"]
        )
        assert snippet(pair["answer"], question) == _reference_snippet(pair["answer"], question)
