"""The pages' Jinja2 environment: autoescape on for every template, so nothing the log
holds (a paper's text, a tool's output, a model's answer) ever reaches a page as markup."""

from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from fastapi import Request, Response
from fastapi.templating import Jinja2Templates

from labrxiv.money import dollars_text

FOLDER = Path(__file__).parent / "templates"

environment = jinja2.Environment(
    loader=jinja2.FileSystemLoader(FOLDER),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)


def _score(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _when(value: datetime | None) -> str:
    return "-" if value is None else f"{value:%Y-%m-%d %H:%M:%S}"


def _query(asked: dict[str, str], page: int, per_page: int) -> str:
    """A listing's query string for another page, its filters kept."""
    kept = {k: v for k, v in asked.items() if v}
    return urlencode(kept | {"page": page, "per_page": per_page})


environment.filters.update(score=_score, when=_when, dollars=dollars_text)
environment.globals.update(query=_query)
templates = Jinja2Templates(env=environment)


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
    """The template `name` filled with `context`."""
    return templates.TemplateResponse(request, name, context, status_code=status)
