"""Live operation: `update` (one incremental pass of the whole loop) and `schedule` (updates on a cadence)."""
