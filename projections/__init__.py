"""The read side: projectors fold the log into read models; nothing here calls a model or a tool."""
