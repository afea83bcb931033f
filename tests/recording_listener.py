"""A ``StreamListener`` for tests: keeps every delta, block and notice it is told."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]


@dataclass
class RecordingListener:
    texts: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    blocks: list[JSON] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def text(self, delta: str) -> None:
        self.texts.append(delta)

    def thinking(self, delta: str) -> None:
        self.thoughts.append(delta)

    def block(self, block: JSON) -> None:
        self.blocks.append(block)

    def notice(self, text: str) -> None:
        self.notices.append(text)
