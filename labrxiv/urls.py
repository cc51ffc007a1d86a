"""Database and broker URLs as they may be shown: never with their password."""

from urllib.parse import urlsplit, urlunsplit

from sqlalchemy.engine import make_url


def shown_url(url: str) -> str:
    """A database URL as it may be shown: the password hidden."""
    return make_url(url).render_as_string(hide_password=True)


def hide_password(url: str) -> str:
    """`url` with its password, if any, shown as ***."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
