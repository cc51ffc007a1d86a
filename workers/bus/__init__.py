"""Buses: how producers hand work to workers. `celery` on Redis, or `local` in-process."""
