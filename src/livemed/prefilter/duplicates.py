"""Exact and near-duplicate detection against everything already kept in the store.

Exact: a hash of the normalised text (lowercase, words only). Near: MinHash (datasketch) over word
shingles with a stable hash (CRC-32, so signatures survive restarts), indexed in MinHash LSH; an
LSH candidate counts as a duplicate only when the estimated Jaccard similarity reaches the
threshold. Signatures of kept documents are persisted in the store's `doc_signatures` table and
loaded on start; documents stored without a signature (imported ones) are indexed then. The
signature parameters (num_perm, shingle_words, seed, scheme) are kept in the store's state; when the
configuration changes them, the stored signatures are dropped and every stored document is signed
again, since signatures made with other parameters cannot be compared.
"""

from __future__ import annotations

import hashlib
import re
import zlib

import numpy as np
from datasketch import LeanMinHash, MinHash, MinHashLSH

from livemed.prefilter.base import reject
from livemed.records import Doc, Rejection
from livemed.store import Store

_WORDS = re.compile(r"\w+")
SEED = 1
SCHEME = "affine32"  # datasketch 2 hash scheme: 32-bit values, what the store keeps
STATE = ("prefilter", "minhash_parameters")  # (namespace, key) of the parameters in the store's state


_MIX = np.uint64(0x9E3779B1)  # an odd 32-bit constant: shingle hash = fold(h * MIX + next word's hash)
_MASK32 = np.uint64(0xFFFFFFFF)


def _identity(value: int) -> int:
    return value


def words(doc: Doc) -> list[str]:
    return _WORDS.findall(f"{doc.title} {doc.text}".lower())


def exact_key(tokens: list[str]) -> str:
    return hashlib.blake2b(" ".join(tokens).encode(), digest_size=16).hexdigest()


class DuplicateFilter:
    """Rejects exact and near duplicates of kept documents; remembers what passes."""

    name = "duplicate"

    def __init__(self, *, threshold: float = 0.8, num_perm: int = 64, shingle_words: int = 3) -> None:
        self.threshold = threshold
        self.num_perm = num_perm
        self.shingle_words = shingle_words
        self.lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
        self.exact: dict[str, str] = {}
        self.signatures: dict[str, np.ndarray] = {}
        self.pending: list[tuple[str, str, bytes]] = []
        self._token_hashes: dict[str, int] = {}
        # Permutations depend only on (num_perm, seed): make them once, not per document.
        self._permutations = MinHash(num_perm=num_perm, seed=SEED, scheme=SCHEME).permutations

    # ------------------------------------------------------------------ signatures

    def minhash(self, tokens: list[str]) -> MinHash:
        """MinHash over word k-shingles; a shingle's hash mixes its words' CRC-32s (vectorised)."""
        hashes = self._token_hash_array(tokens)
        k = min(self.shingle_words, max(1, len(hashes)))
        shingles = np.zeros(max(1, len(hashes) - k + 1), dtype=np.uint64)
        for offset in range(k):
            shingles = shingles * _MIX + hashes[offset : offset + len(shingles)]
        sketch = MinHash(
            num_perm=self.num_perm,
            seed=SEED,
            hashfunc=_identity,
            scheme=SCHEME,
            permutations=self._permutations,
        )
        sketch.update_batch((shingles & _MASK32).tolist())
        return sketch

    def _token_hash_array(self, tokens: list[str]) -> np.ndarray:
        """CRC-32 of each token, memoised (a C-level lookup per token once the words are known)."""
        cache = self._token_hashes
        try:
            return np.fromiter(map(cache.__getitem__, tokens), dtype=np.uint64, count=len(tokens))
        except KeyError:
            if len(cache) > 2_000_000:
                cache.clear()
            for token in set(tokens).difference(cache):
                cache[token] = zlib.crc32(token.encode())
            return np.fromiter(map(cache.__getitem__, tokens), dtype=np.uint64, count=len(tokens))

    def _remember(self, doc_id: str, key: str, values: np.ndarray) -> None:
        self.exact.setdefault(key, doc_id)
        self.signatures[doc_id] = values
        if doc_id not in self.lsh:
            self.lsh.insert(doc_id, LeanMinHash(seed=SEED, hashvalues=values, scheme=SCHEME))

    def load(self, store: Store) -> int:
        """Index every stored signature, and sign stored docs that have none; returns the index size."""
        from livemed.records import Doc as DocRecord

        parameters = self.parameters()
        stored = store.state_get(*STATE)
        if stored is not None and stored != parameters:
            store.signatures_clear()  # signed with other parameters: sign every stored doc again
        for doc_id, key, blob in store.signatures_iter():
            values = np.frombuffer(blob, dtype=np.uint32)
            if len(values) == self.num_perm:  # else (an older store): signed again below
                self._remember(doc_id, key, values)
        for doc_id in [i for i in store.ids("doc") if i not in self.signatures]:
            doc = store.get(DocRecord, doc_id)
            if doc is not None:
                self._add(doc.id, words(doc))
        self.flush(store)
        if stored != parameters:
            store.state_set(*STATE, parameters)
        return len(self.signatures)

    def parameters(self) -> dict[str, int | str]:
        """What a stored signature depends on."""
        return {
            "num_perm": self.num_perm,
            "shingle_words": self.shingle_words,
            "seed": SEED,
            "scheme": SCHEME,
        }

    def _add(self, doc_id: str, tokens: list[str], sketch: MinHash | None = None) -> None:
        key = exact_key(tokens)
        values = (sketch or self.minhash(tokens)).hashvalues.astype(np.uint32)
        self._remember(doc_id, key, values)
        self.pending.append((doc_id, key, values.tobytes()))

    def flush(self, store: Store) -> None:
        """Persist the signatures of documents kept since the last flush."""
        if self.pending:
            store.signatures_put(self.pending)
            self.pending = []

    # ------------------------------------------------------------------ the filter

    def __call__(self, doc: Doc) -> Doc | Rejection:
        tokens = words(doc)
        same = self.exact.get(exact_key(tokens))
        if same is not None and same != doc.id:
            return reject(doc, "duplicate_exact", f"same text as {same}")
        sketch = self.minhash(tokens)
        values = sketch.hashvalues.astype(np.uint32)
        best, similarity = None, 0.0
        for candidate in self.lsh.query(sketch):
            if candidate == doc.id:
                continue
            estimate = float(np.count_nonzero(self.signatures[candidate] == values)) / self.num_perm
            if estimate >= self.threshold and estimate > similarity:
                best, similarity = candidate, estimate
        if best is not None:
            return reject(doc, "duplicate_near", f"~{similarity:.2f} similar to {best}")
        self._add(doc.id, tokens, sketch)
        return doc
