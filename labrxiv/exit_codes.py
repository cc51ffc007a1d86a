"""The exit codes the commands share beyond 0 (done), 1 and 2 (refused before anything
was written). A leaf: `labrxiv.entry` takes one before the command line is imported."""

EVERY_RUN_ERRORED = 1
"""A campaign whose every run ended in error: nothing was measured."""
NOT_FINISHED = 3
"""The watch timed out before the campaign finished."""
EXIT_INTERRUPTED = 130
"""What a shell expects of a command stopped by Ctrl-C (128 + SIGINT)."""
