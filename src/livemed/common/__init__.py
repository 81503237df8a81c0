"""Shared helpers that belong to no stage: text and statistics tools, atomic writes, data blocks."""
