"""Files on a real disk for the tool tests: ``write``, and the secret kept outside the
workspace that no tool may read, show or change."""

from __future__ import annotations

from pathlib import Path

SECRET = "TOPSECRET-outside-the-workspace"


def write(path: Path, text: str | bytes) -> Path:
    """Write ``text`` at ``path``, making its directories; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path
