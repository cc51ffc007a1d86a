"""Analysis of runs from the log alone: behaviour figures and failure-mode findings.

Every function here is a pure function of a run's events (through the fold the lab
steps use, `runstate`), so the read models that keep the results live (`projections/`),
`labrxiv analyze` and the tests agree by construction. This package imports `events`
and `runstate` and nothing else of the project: both `projections/` and `labrxiv/`
may import it.
"""
