"""Everything that acts: the recorder, and (later) lab steps, policies, tools, graders.

Workers publish events and the recorder appends them; nothing here writes a read model.
"""
