"""Uniform errors: an unknown id is a 404, a malformed query (an id prefix that names
several among them) a 400 with the reason; a
page under `/api` answers JSON `{"error", "status"}`, any other an HTML page."""

from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from labrxiv.errors import Ambiguous, NotFound
from labrxiv.read_shapes import json_bytes
from labrxiv.web.reading import BadQuery
from labrxiv.web.templates import render

API_PREFIX = "/api/"


def error_response(request: Request, status: int, message: str) -> Response:
    """The error as JSON under `/api`, else as the app's error page."""
    if request.url.path.startswith(API_PREFIX):
        body = json_bytes({"error": message, "status": status}, indent=False)
        return Response(body, status_code=status, media_type="application/json")
    return render(request, "error.html", {"status": status, "message": message}, status)


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
        return error_response(request, exc.status_code, message)

    app.add_exception_handler(NotFound, not_found)
    app.add_exception_handler(Ambiguous, bad_query)  # a prefix that names several
    app.add_exception_handler(BadQuery, bad_query)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(HTTPException, http)
