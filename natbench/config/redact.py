"""Credentials written into URLs (``https://user:password@host/...``), kept out of everything natbench prints.

A URL the user gives (``--jool-source``, a mirror) may carry a user name and password in its authority part;
natbench uses them (:func:`split_credentials`) but shows the URL only through :func:`redact_credentials`, which
replaces the password, or a lone token, with ``***`` wherever a URL appears in a text: progress lines, errors,
logs and the manifests natbench writes. The CLI runs every line it prints through it as well, so an error text
quoting a URL (an HTTP library's message) cannot leak it either.
"""

from __future__ import annotations

import base64
import re
from urllib.parse import unquote, urlsplit, urlunsplit

REDACTED = "***"
"""What a password (or a token given as the user name) is shown as."""

_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s]*)@")


def _hidden(match: re.Match[str]) -> str:
    user, sep, _password = match.group("userinfo").partition(":")
    shown = f"{user}:{REDACTED}" if sep else REDACTED  # a lone user part may be a token: hidden as well
    return f"{match.group('scheme')}{shown}@"


def redact_credentials(text: str) -> str:
    """``text`` with the password of every URL in it replaced by ``***`` (``https://me:***@host/x``); a URL with a
    user part only (often a token) gets ``***`` for it."""
    if "@" not in text:
        return text
    return _USERINFO.sub(_hidden, text)


def split_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@`` part, and the ``Authorization`` header value (HTTP Basic) that
    carries them instead (None when the URL has none)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    bare = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    return bare, "Basic " + base64.b64encode(pair.encode()).decode("ascii")
