"""What `labrxiv demo` runs unless told otherwise (apart from the demo, so the command
line can show it without importing the demo)."""

DEMO_TASK = "noisy-digits"
"""The task the demo runs: the one whose recorded archive effect it states."""
LABS, PAPERS = 3, 3
"""Labs a campaign and papers a lab, for a task with no measured effect recorded."""
