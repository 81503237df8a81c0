"""Dense retrieval with any sentence-embedding encoder (extra `livemed[dense]`).

An encoder is anything with `encode(texts) -> array (n, dim)`; `sentence_transformer(name)` wraps a
sentence-transformers model (MedCPT or any other). Passages are embedded once, queries per search;
hits below `min_score` cosine similarity are not evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from livemed.errors import MissingDependencyError
from livemed.evidence.corpus import Passage, snippet
from livemed.records import EvidenceRef


class Encoder(Protocol):
    def encode(self, texts: Sequence[str]) -> Any: ...


def sentence_transformer(name: str) -> Encoder:
    """A sentence-transformers model as an encoder (needs `pip install 'livemed[dense]'`)."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise MissingDependencyError("sentence-transformers", "dense") from None
    model: Encoder = SentenceTransformer(name)
    return model


def _unit(vectors: Any) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    result: np.ndarray = array / np.where(norms == 0, 1.0, norms)
    return result


class DenseRetriever:
    """Cosine similarity between the query embedding and the passage embeddings."""

    name = "dense"

    def __init__(self, passages: list[Passage], encoder: Encoder, *, min_score: float = 0.3) -> None:
        self.passages = passages
        self.encoder = encoder
        self.min_score = min_score
        self._matrix = _unit(encoder.encode([f"{p.title}\n{p.text}" for p in passages]))

    async def search(self, query: str, *, k: int = 3) -> list[EvidenceRef]:
        scores = self._matrix @ _unit(self.encoder.encode([query]))[0]
        order = np.argsort(-scores)[:k]
        return [
            EvidenceRef(
                id=self.passages[i].id,
                snippet=snippet(self.passages[i].text, query),
                score=round(float(scores[i]), 4),
                url=self.passages[i].url,
            )
            for i in order
            if scores[i] >= self.min_score
        ]
