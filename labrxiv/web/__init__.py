"""`labrxiv serve`: the read models as server-rendered pages and a JSON API (`/api/v1`).

Read-only: every route is a GET that reads the read models (or a run's stream) through
the functions the CLI's read commands use; nothing appends to the log.
"""
