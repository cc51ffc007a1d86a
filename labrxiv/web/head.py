"""HEAD wherever GET is (HTTP asks it of a server; uptime checks and `curl -I` send it):
the request is routed as a GET and answered with the GET's status and headers, no body."""

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGet:
    """ASGI middleware answering HEAD as GET without the body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headless(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headless)


def allowed(methods: str) -> str:
    """An `Allow` header's methods with HEAD beside GET, as this app answers them."""
    named = [m.strip() for m in methods.split(",") if m.strip()]
    if "GET" in named and "HEAD" not in named:
        named.insert(named.index("GET") + 1, "HEAD")
    return ", ".join(named)
