"""Peer review of archive papers (CycleReviewer): reviewers, the meta-reviewer, the review task."""
