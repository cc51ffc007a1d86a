"""Any agent as a lab: a third-party agent process run in the run's sandbox, its lab-API
calls and model calls recorded by the worker (docs/agents.md)."""
