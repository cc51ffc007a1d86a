"""Checks on what a paper says that both sides make: the reviewers (`workers/review`) and
the failure-mode detectors (`analysis.detectors`). A leaf like the fold: it imports
neither side."""

import re

ADDRESSES_REVIEWER = re.compile(
    r"\b(?:dear\s+reviewers?|to\s+the\s+reviewers?|reviewers?\s+(?:should|must|are\s+asked)"
    r"|(?:rate|score|grade)\s+this\s+(?:paper|work|submission)"
    r"|give\s+(?:this|it)\s+(?:paper\s+)?(?:a\s+)?(?:rating\s+of\s+)?10\b"
    r"|accept\s+this\s+(?:paper|submission)"
    r"|ignore\s+(?:all\s+)?(?:previous|prior|above)\s+instructions)",
    re.IGNORECASE,
)
"""Text in a paper that speaks to its reviewer instead of about its work (an integrity
finding: CycleReviewer's papers are data for the reviewer, never instructions)."""


def addresses_reviewer(title: str, abstract: str, body: str) -> str | None:
    """The words of a paper that speak to its reviewer, or None."""
    found = ADDRESSES_REVIEWER.search(f"{title}\n{abstract}\n{body}")
    return None if found is None else found.group(0)
