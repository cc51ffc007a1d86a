"""labrxiv: autonomous research labs on an event-sourced log (the application shell)."""

__version__ = "0.1.0"
