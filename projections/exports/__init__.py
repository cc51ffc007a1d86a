"""The log in the formats other tools read: OpenTelemetry traces, Inspect AI eval logs, fine-tuning trajectories."""
