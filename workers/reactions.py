"""Every reaction the reactor sends from the log, in order: labs' next steps and
campaigns' ends (`workers.lab.reactions`), papers' reviews (`workers.review.reactions`)."""

from workers.lab.reactions import schedule_next_steps
from workers.review.reactions import schedule_reviews

REACTIONS = (schedule_next_steps, schedule_reviews)
