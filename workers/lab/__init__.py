"""The lab loop: a run's next step is a fold of its stream, a policy decision, and a tool call."""
