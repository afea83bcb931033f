"""What a terminal client is started with (the parsed command line) and how it exits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tiller.jsontypes import JSON

EXIT_COMPLETED = 0
EXIT_FAILED = 1
EXIT_STOPPED = 2
EXIT_USAGE = 64
EXIT_INTERRUPTED = 130
OUTCOME_EXIT = {
    "completed": EXIT_COMPLETED,
    "failed": EXIT_FAILED,
    "stopped": EXIT_STOPPED,
    "interrupted": EXIT_INTERRUPTED,
}

INVALID_PARAMS = -32602  # the server's answer to options it refuses: a usage error


@dataclass(frozen=True)
class RunOptions:
    prompt: str
    workspace: Path
    initialization_options: JSON
    yes: bool


@dataclass(frozen=True)
class ChatOptions:
    workspace: Path
    initialization_options: JSON
    resume: str | None
