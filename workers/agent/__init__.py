"""Labs run by a third-party agent process: what the agent uses inside its sandbox
(`inside/`) and example agents built on it (`examples/`)."""
