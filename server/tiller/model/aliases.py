"""Claude Code's model aliases: ``sonnet``, ``opus`` and ``haiku`` name the catalog's current
model of each line wherever a user writes a model in a file (an agent's or a custom command's
``model:``), so the request carries an id the API and the catalog know, and is shaped for that
model (adaptive thinking and effort, its window and output limit) like any turn's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

MODEL_ALIASES: Final[Mapping[str, str]] = {
    "sonnet": "claude-sonnet-5-5",
    "opus": "claude-opus-5-5",
    "haiku": "claude-haiku-5-5",
}
"""Alias -> id: the newest catalog entry of each line (``models.CATALOG``)."""


def model_named(value: str | None) -> str | None:
    """The model id a frontmatter's ``model`` names: an alias's id (any case), else the value
    as written; None (the session's or parent's model) for nothing or ``inherit``."""
    name = (value or "").strip()
    if name.lower() in ("", "inherit"):
        return None
    return MODEL_ALIASES.get(name.lower(), name)
