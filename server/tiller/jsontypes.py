"""The JSON shapes every layer passes around: one definition."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]  # a JSON object as the json module reads it
