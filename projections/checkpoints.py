"""The projectors' checkpoints: how far each has applied the log, kept beside its read
model (`events.checkpoints` for what reading, claiming and moving one does)."""

from sqlmodel import SQLModel

from events.checkpoints import Checkpoints

PROJECTION_CHECKPOINTS = Checkpoints("projection_checkpoints", SQLModel.metadata)
CHECKPOINTS = PROJECTION_CHECKPOINTS.table

read_checkpoint = PROJECTION_CHECKPOINTS.read
read_checkpoints = PROJECTION_CHECKPOINTS.read_many
ensure_checkpoints = PROJECTION_CHECKPOINTS.ensure
claim_checkpoints = PROJECTION_CHECKPOINTS.claim
advance_checkpoints = PROJECTION_CHECKPOINTS.advance
