"""The JSON shapes every layer passes around: one definition."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]  # a JSON object as the json module reads it
# Every number on the wire lies within (here, not in protocol.py: the ACP face checks the first
# message with tiller.faces.common.wire.flaw before anything heavy is loaded).
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
