"""The `labrxiv serve` application: pages, the JSON API and its OpenAPI schema
(`/openapi.json`), the errors, and the headers every page carries."""

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response
from fastapi.staticfiles import StaticFiles

import labrxiv
from events import EventStore
from labrxiv.web import archive, campaigns, errors, runs
from labrxiv.web.head import HeadAsGet
from labrxiv.web.templates import FOLDER

Next = Callable[[Request], Awaitable[Response]]
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; frame-src 'self'; frame-ancestors 'self'; base-uri 'none'; "
    "form-action 'self'"
)
"""What a page may load and run: only the app's own script and style files, so even
markup that got into a page would not run (the templates escape everything the log
holds; this is the second wall)."""


def create_app(store: EventStore) -> FastAPI:
    """The app serving the read models of the log in `store`; it only reads."""
    app = FastAPI(
        title="labrxiv",
        version=labrxiv.__version__,
        summary="Autonomous research labs' archive, campaigns and runs, read-only.",
        docs_url=None,
        redoc_url=None,
    )
    app.state.store = store
    errors.install(app)
    app.openapi = lambda: errors.openapi_without_422(app)  # type: ignore[method-assign]
    app.add_middleware(HeadAsGet)
    app.mount("/static", StaticFiles(directory=FOLDER.parent / "static"), name="static")
    for module in (archive, campaigns, runs):
        app.include_router(module.api, responses=errors.ERRORS)
        app.include_router(module.pages)

    @app.middleware("http")
    async def headers(request: Request, call_next: Next) -> Response:
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    return app
