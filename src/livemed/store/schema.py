"""The store's tables (SQLAlchemy Core). Times are naive UTC, payloads record JSON, ids unbounded text."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

meta_table = sa.Table(
    "livemed_meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

records_table = sa.Table(
    "records",
    metadata,
    sa.Column("kind", sa.String(32), primary_key=True),
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("parent_id", sa.Text, nullable=True),
    sa.Column("published_at", sa.DateTime(), nullable=True),
    sa.Column("updated_at", sa.DateTime(), nullable=False),
    sa.Column("payload", sa.Text, nullable=False),
    # (kind, parent_id, id): a parent's records in id order straight from the index, so the planner
    # needs no statistics to prefer it over walking the primary key (schema version 3)
    sa.Index("ix_records_kind_parent", "kind", "parent_id", "id"),
    sa.Index("ix_records_kind_published", "kind", "published_at"),
)

cache_table = sa.Table(
    "response_cache",
    metadata,
    sa.Column("key", sa.String(128), primary_key=True),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("created_at", sa.DateTime(), nullable=False),
    sa.Column("payload", sa.Text, nullable=False),
)

state_table = sa.Table(
    "run_state",
    metadata,
    sa.Column("namespace", sa.String(64), primary_key=True),
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("updated_at", sa.DateTime(), nullable=False),
    sa.Column("value", sa.Text, nullable=False),
)

signatures_table = sa.Table(
    "doc_signatures",
    metadata,
    sa.Column("doc_id", sa.Text, primary_key=True),
    sa.Column("exact", sa.String(64), nullable=False, index=True),
    sa.Column("minhash", sa.LargeBinary, nullable=False),
)
