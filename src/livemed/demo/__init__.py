"""Bundled demo data (documents for an offline first run)."""
