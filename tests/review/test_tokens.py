"""Invite tokens: random, stored only as their SHA-256, replaced by a new invite."""

from __future__ import annotations

import hashlib

from livemed.records import Reviewer
from livemed.review.tokens import invite, reviewer_for
from livemed.store import Store


def test_an_invite_stores_the_tokens_hash_and_never_the_token(sqlite_store: Store) -> None:
    token = invite(sqlite_store, "dr.ada")
    stored = sqlite_store.get(Reviewer, "reviewer:dr.ada")
    assert stored is not None
    assert stored.token_sha256 == hashlib.sha256(token.encode()).hexdigest()
    assert token not in stored.model_dump_json()
    assert len(token) >= 43  # 32 random bytes, URL-safe base64


def test_a_token_finds_its_reviewer_and_nothing_else_does(sqlite_store: Store) -> None:
    ada, bo = invite(sqlite_store, "ada"), invite(sqlite_store, "bo")
    assert ada != bo
    found = reviewer_for(sqlite_store, ada)
    assert found is not None
    assert found.name == "ada"
    assert reviewer_for(sqlite_store, bo) is not None
    assert reviewer_for(sqlite_store, ada[:-1]) is None
    assert reviewer_for(sqlite_store, "") is None


def test_inviting_again_makes_a_new_token_and_ends_the_old_one(sqlite_store: Store) -> None:
    old = invite(sqlite_store, "ada")
    new = invite(sqlite_store, "ada")
    assert old != new
    assert reviewer_for(sqlite_store, old) is None
    assert reviewer_for(sqlite_store, new) is not None
    assert len(list(sqlite_store.iter(Reviewer))) == 1


def test_a_revoked_reviewers_token_finds_no_one(sqlite_store: Store) -> None:
    token = invite(sqlite_store, "ada")
    stored = sqlite_store.get(Reviewer, "reviewer:ada")
    assert stored is not None
    sqlite_store.put([stored.model_copy(update={"revoked": True})])
    assert reviewer_for(sqlite_store, token) is None
