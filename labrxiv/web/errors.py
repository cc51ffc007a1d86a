"""Uniform errors: an unknown id is a 404, a malformed query (an id prefix that names
several among them) a 400 with the reason; a
page under `/api` answers JSON `{"error", "status"}`, any other an HTML page."""

from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from labrxiv.errors import Ambiguous, NotFound
from labrxiv.read_shapes import json_bytes
from labrxiv.web.head import allowed
from labrxiv.web.reading import BadQuery
from labrxiv.web.templates import render

API_PREFIX = "/api/"


class Error(BaseModel):
    """What the API answers an error with (and the schema says it does)."""

    error: str = Field(description="Why, in one line.")
    status: int = Field(description="The HTTP status, again.")


ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": Error, "description": "A malformed query: the reason."},
    404: {"model": Error, "description": "No such paper, run, campaign or page."},
}
"""The errors every API route may answer, for its schema."""


def error_response(
    request: Request, status: int, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    """The error as JSON under `/api`, else as the app's error page."""
    if request.url.path.startswith(API_PREFIX):
        body = json_bytes({"error": message, "status": status}, indent=False)
        return Response(body, status_code=status, media_type="application/json", headers=headers)
    page = render(request, "error.html", {"status": status, "message": message}, status)
    page.headers.update(headers or {})
    return page


def openapi_without_422(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI schema without FastAPI's 422 answers: a request that does not
    validate is answered 400 (`ERRORS`), never 422."""
    if app.openapi_schema is None:
        schema = get_openapi(
            title=app.title, version=app.version, summary=app.summary, routes=app.routes
        )
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                operation.get("responses", {}).pop("422", None)
        shapes = schema.get("components", {}).get("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            shapes.pop(unused, None)
        app.openapi_schema = schema
    return app.openapi_schema


def _invalid(exc: RequestValidationError) -> str:
    """The first wrong parameter and why, in one line."""
    first: dict[str, Any] = exc.errors()[0]
    where = [str(part) for part in first.get("loc", ()) if part not in ("query", "path")]
    name = ".".join(where) or "the request"
    return f"{name}: {first.get('msg', 'invalid')}"


def install(app: FastAPI) -> None:
    """The app's error handlers."""

    async def not_found(request: Request, exc: Exception) -> Response:
        return error_response(request, 404, str(exc))

    async def bad_query(request: Request, exc: Exception) -> Response:
        return error_response(request, 400, str(exc))

    async def invalid(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return error_response(request, 400, _invalid(exc))

    async def http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        message = "no such page" if exc.status_code == 404 else str(exc.detail)
        headers = dict(exc.headers or {})
        if "Allow" in headers:  # a 405: what the path does answer
            headers["Allow"] = allowed(headers["Allow"])
        return error_response(request, exc.status_code, message, headers)

    app.add_exception_handler(NotFound, not_found)
    app.add_exception_handler(Ambiguous, bad_query)  # a prefix that names several
    app.add_exception_handler(BadQuery, bad_query)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(HTTPException, http)
