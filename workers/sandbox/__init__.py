"""Sandboxes: where a lab's tools run, confined to its workspace, with limits and no network."""
