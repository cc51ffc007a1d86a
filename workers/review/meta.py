"""The meta-reviewer: a paper's decision from its reviews (docs/review.md, "The decision")."""

from statistics import fmean

from events.payloads import ReviewConfig, ReviewForm
from events.payloads.review import Decision


def decide(forms: list[ReviewForm], config: ReviewConfig) -> tuple[Decision, str, float]:
    """Accept when no review flags ethics, the mean soundness is at least 3 (good) and the
    mean rating reaches `config.accept_rating`; else reject. Returns the decision, its
    reason with the numbers, and the mean rating."""
    if not forms:
        raise ValueError("a decision needs at least one review")
    rating = fmean(f.rating for f in forms)
    soundness = fmean(f.soundness for f in forms)
    flagged = sum(f.ethics_flag for f in forms)
    numbers = (
        f"mean rating {rating:.2f} (bar {config.accept_rating:g}), mean soundness "
        f"{soundness:.2f}, {len(forms)} review(s)"
    )
    if flagged:
        return "reject", f"{flagged} review(s) flag ethics; {numbers}", rating
    if soundness < 3:
        return "reject", f"claims not supported (soundness below 3); {numbers}", rating
    if rating < config.accept_rating:
        return "reject", f"rating below the bar; {numbers}", rating
    return "accept", numbers, rating
