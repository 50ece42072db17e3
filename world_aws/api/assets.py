"""The web UI's static files, shipped in the package (``world_aws/api/static/``): no CDN, no build step.

The UI is plain HTML, CSS and JavaScript that reads the documented HTTP API only
(same origin: the server that serves these files answers the API too, see
:mod:`world_aws.api.server`).
"""

from __future__ import annotations

from importlib import resources

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}


def read(name: str) -> tuple[bytes, str] | None:
    """The file ``name`` of the UI (e.g. ``app.js``) and its content type; None if there is none.

    Only plain file names with a known extension are served (no directories, no ``..``).
    """
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    if "/" in name or "\\" in name or name.startswith(".") or suffix not in CONTENT_TYPES:
        return None
    entry = resources.files("world_aws.api").joinpath("static", name)
    if not entry.is_file():
        return None
    return entry.read_bytes(), CONTENT_TYPES[suffix]
