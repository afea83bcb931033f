"""Web domains in one spelling: what the web tools' domain lists and the WebFetch rules name.

``bücher.example``, ``BÜCHER.example.`` and ``xn--bcher-kva.example`` are one host, and so are
``evil.example:443`` and ``https://user@evil.example/path``. Each entry is reduced to its host in
the ASCII form the network uses (IDNA with the UTS #46 mapping, which also folds case and
full-width dots), without scheme, user, port or trailing dot, before it is compared with
another or sent to the API: a block is never skipped because it was spelt another way.

``host_of`` gives a host (a URL's path dropped: a rule or a blocked entry covers the host);
``allowed_entry`` keeps a path after the host (``github.com/anthropics``: the API takes
subpaths in ``allowed_domains``, and dropping it would allow more than was written).
Anything that is not a host after this is ``None``: the caller says so.
"""

from __future__ import annotations

import functools
import ipaddress
import re

import idna

_URL = re.compile(
    r"(?:[A-Za-z][A-Za-z0-9+.\-]*://)?(?P<netloc>[^/?#]*)(?P<path>[^?#]*)(?:[?#].*)?", re.DOTALL
)
_PORT = re.compile(r"(?P<host>.*?)(?::(?P<port>[0-9]{0,5}))?", re.DOTALL)
WILDCARD = "*."


def host_of(text: str) -> str | None:
    """The host ``text`` names (a host, ``host:port`` or a URL), normalised; None if none."""
    parts = _parts(text)
    return None if parts is None else parts[0]


def host_pattern_of(text: str) -> str | None:
    """``host_of`` that keeps a leading ``*.`` (a WebFetch rule's "its subdomains")."""
    stripped = text.strip()
    if stripped.startswith(WILDCARD):
        host = host_of(stripped[len(WILDCARD) :])
        return None if host is None else WILDCARD + host
    return host_of(stripped)


def allowed_entry(text: str) -> str | None:
    """An ``allowedDomains`` entry normalised: its host, then any path written after it."""
    parts = _parts(text)
    if parts is None:
        return None
    host, path = parts
    path = path.rstrip("/")
    return host + path if path else host


@functools.lru_cache(maxsize=1024)
def _parts(text: str) -> tuple[str, str] | None:
    match = _URL.fullmatch(text.strip())
    if match is None:
        return None
    netloc = match["netloc"].rpartition("@")[2]
    if netloc.startswith("["):  # an IPv6 literal, perhaps with a port
        inner, closed, rest = netloc[1:].partition("]")
        if not closed or (rest and not re.fullmatch(r":[0-9]{1,5}", rest)):
            return None
        try:
            return f"[{ipaddress.IPv6Address(inner).compressed}]", match["path"]
        except ValueError:
            return None
    port = _PORT.fullmatch(netloc)
    host = port["host"] if port is not None else netloc
    host = host[:-1] if host.endswith(".") else host
    if not host or host.endswith(".") or "*" in host:
        return None
    try:
        ascii_host = idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        return None
    # the mapping may end the host in a dot of its own (a full-width dot, a soft hyphen
    # before a dot): dropped once, as a written trailing dot is
    ascii_host = ascii_host[:-1] if ascii_host.endswith(".") else ascii_host
    if not ascii_host or ascii_host.endswith("."):
        return None
    return ascii_host.lower(), match["path"]
