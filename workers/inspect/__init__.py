"""The LLM inspector (`labrxiv analyze --inspector`): a model judges a run from its log."""
