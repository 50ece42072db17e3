"""What the loopback servers accept from a browser: one policy for ``world-aws dev`` and ``world-aws ui``.

Both servers (:mod:`world_aws.api.server`) listen on 127.0.0.1, and ``world-aws ui``
signs what it passes on with the developer's AWS credentials, so any web page the
developer opens must not be able to drive them. Every request is checked here
before it reaches the API or the UI's files:

* **Host** must be a loopback name with the server's own port (``localhost``,
  ``127.0.0.1`` or ``[::1]``), reads included: a page whose name was rebound to
  127.0.0.1 (DNS rebinding) sends its own name and is refused (403 ``Forbidden``).
* **Origin** and **Sec-Fetch-Site**: a state-changing request (POST, PUT, PATCH,
  DELETE) must come from the server's own origin (``Sec-Fetch-Site: same-origin``
  or ``none``; an ``Origin`` equal to ``http://<Host>``), and a read from another
  site is refused unless it is a top-level navigation (a link to the UI). Another
  port of 127.0.0.1 is another origin ("same-site" is not enough). A request with
  neither header (curl, the CLI) is not a browser's cross-site request.
* **Content-Type**: a state-changing request must say ``application/json`` (else
  415), so a browser must send a CORS preflight first, which these servers never
  grant.

Every answer (the UI's files and the API's) carries :data:`SECURITY_HEADERS`: a
Content-Security-Policy (scripts, styles and requests from the server itself only,
no inline code, no framing), ``X-Frame-Options: DENY``, ``X-Content-Type-Options:
nosniff``, ``Cross-Origin-Resource-Policy: same-origin`` and no referrer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Sec-Fetch-Site values of a request the page of this very origin (or the user) made.
OWN_SITE = frozenset({"same-origin", "none"})

CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "cross-origin-resource-policy": "same-origin",
    "referrer-policy": "no-referrer",
}


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is refused: the HTTP status, the error kind and a message naming the header."""

    status: int
    kind: str
    message: str


def check_request(method: str, headers: Mapping[str, str], port: int) -> Refusal | None:
    """The refusal of a request to the loopback server on ``port``, or None to serve it.

    Args:
        method: the request method (any case).
        headers: the request headers (any case).
        port: the port the server listens on.
    """
    lowered = {name.lower(): value.strip() for name, value in headers.items()}
    host = lowered.get("host", "")
    if not _is_own_host(host, port):
        allowed = ", ".join(f"{name}:{port}" for name in LOOPBACK_NAMES)
        return Refusal(
            403,
            "Forbidden",
            f"Host {host!r} is not this server (allowed: {allowed}); "
            "a loopback server answers only its loopback names",
        )
    upper = method.upper()
    changing = upper in STATE_CHANGING
    fetch_site = lowered.get("sec-fetch-site", "").lower()
    navigation = upper in ("GET", "HEAD") and lowered.get("sec-fetch-mode", "").lower() == "navigate"
    if fetch_site and fetch_site not in OWN_SITE and not navigation:
        return Refusal(
            403,
            "Forbidden",
            f"cross-site request refused (Sec-Fetch-Site: {fetch_site}): only pages served by "
            f"http://{host} may call this server",
        )
    origin = lowered.get("origin")
    if origin is not None and origin != f"http://{host}":
        return Refusal(
            403,
            "Forbidden",
            f"cross-origin request refused (Origin: {origin}): only pages served by http://{host} "
            "may call this server",
        )
    if changing and not is_json(lowered.get("content-type", "")):
        given = lowered.get("content-type") or "none"
        return Refusal(
            415,
            "UnsupportedMediaType",
            f"Content-Type must be application/json for {upper} (got {given})",
        )
    return None


def is_json(content_type: str) -> bool:
    """Whether a Content-Type header names ``application/json`` (parameters such as charset aside)."""
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


def _is_own_host(host: str, port: int) -> bool:
    if host.startswith("["):  # an IPv6 literal: [::1]:8787
        name, _, rest = host.partition("]")
        name, given_port = name + "]", rest.removeprefix(":") if rest else "80"
    else:
        name, colon, given_port = host.partition(":")
        given_port = given_port if colon else "80"  # no port: only the scheme's default may be left out
    return name.lower() in LOOPBACK_NAMES and given_port == str(port)
