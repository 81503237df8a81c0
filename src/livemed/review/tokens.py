"""Reviewers' invite tokens: made once, stored only as their SHA-256, checked in constant time.

`invite` makes a reviewer's token (`secrets.token_urlsafe(32)`) and stores a `Reviewer` with its hash;
inviting a reviewer again replaces the hash, so the old link stops working. `reviewer_for` finds the
reviewer a token belongs to (None for an unknown or revoked token).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from livemed.records import Reviewer
from livemed.store import Store


def token_hash(token: str) -> str:
    """The SHA-256 (hex) of a token: what the store keeps."""
    return hashlib.sha256(token.encode()).hexdigest()


def invite(store: Store, name: str) -> str:
    """A new token for reviewer `name` (its hash stored, replacing an earlier one); the token."""
    token = secrets.token_urlsafe(32)
    store.put([Reviewer(name=name, token_sha256=token_hash(token))])
    return token


def reviewer_for(store: Store, token: str) -> Reviewer | None:
    """The reviewer whose token this is, or None (every stored hash is compared in constant time)."""
    wanted = token_hash(token)
    found: Reviewer | None = None
    for reviewer in store.iter(Reviewer):
        if hmac.compare_digest(reviewer.token_sha256, wanted) and not reviewer.revoked:
            found = reviewer
    return found
