"""Live operation, composed of the stages' own functions: `update` (one incremental pass of the whole loop),
`stream` (`eval`: answers graded as they arrive) and `schedule` (updates on a cadence)."""
