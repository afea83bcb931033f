"""What a terminal client is started with (the parsed command line) and how it exits."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from tiller.jsontypes import JSON

# One exit code per way a run ends (``tiller run --help``, docs/ci.md, cli.py's docstring).
EXIT_COMPLETED: Final = 0
EXIT_FAILED: Final = 1
EXIT_STOPPED: Final = 2
EXIT_REFUSED: Final = 3
EXIT_USAGE: Final = 64  # sysexits EX_USAGE
EXIT_SERVER_DIED: Final = 70  # sysexits EX_SOFTWARE: the server exited or the link to it broke
EXIT_INTERRUPTED: Final = 130
OUTCOME_EXIT: Final = {
    "completed": EXIT_COMPLETED,
    "failed": EXIT_FAILED,
    "stopped": EXIT_STOPPED,
    "refused": EXIT_REFUSED,
    "interrupted": EXIT_INTERRUPTED,
}
EXIT_OUTCOME: Final = {
    EXIT_COMPLETED: "completed",
    EXIT_FAILED: "failed",
    EXIT_STOPPED: "stopped",
    EXIT_REFUSED: "refused",
    EXIT_USAGE: "usage_error",
    EXIT_SERVER_DIED: "server_died",
    EXIT_INTERRUPTED: "interrupted",
}
"""The ``outcome`` of a ``--output-format json`` result, by exit code."""

INVALID_PARAMS = -32602  # the server's answer to options it refuses: a usage error

OutputFormat = Literal["text", "json", "stream-json"]
OUTPUT_FORMATS: Final[tuple[OutputFormat, ...]] = ("text", "json", "stream-json")
SERVER_TOOL_BUDGET: Final = 20  # the server's default ``toolBudget`` (docs/protocol.md)
DISALLOWED_FEEDBACK: Final = "denied by --disallowed-tools"
UNATTENDED_FEEDBACK: Final = (
    "nobody could be asked for permission: this run is not interactive (no terminal), and the "
    "user did not refuse it. Go on without it if you can, and say in your answer which call "
    "needs permission: the user can run again with --yes or allow it with a rule."
)
"""Why a call was not run when no one could be asked: the model must not read it as the
user's refusal (``asked: false`` in the answer, docs/protocol.md)."""


@dataclass(frozen=True)
class ToolRules:
    """``--allowed-tools`` / ``--disallowed-tools``: how the client answers the calls the
    server asks about (``tiller/confirmTool``); a denial wins over an allowance and ``--yes``."""

    allowed: frozenset[str] = frozenset()
    disallowed: frozenset[str] = frozenset()

    def answer(self, name: str) -> JSON | None:
        """The answer the rules give for tool ``name``; ``None`` when they say nothing."""
        if name in self.disallowed:
            return {"decision": "deny", "asked": False, "feedback": DISALLOWED_FEEDBACK}
        if name in self.allowed:
            return {"decision": "allow"}
        return None


@dataclass(frozen=True)
class RunOptions:
    prompt: str
    workspace: Path
    initialization_options: JSON
    yes: bool
    output_format: OutputFormat = "text"
    max_turns: int | None = None  # model responses whose tool calls may run (None: no limit)
    tool_budget: int = SERVER_TOOL_BUDGET  # the checkpoint budget asked for (with --max-turns
    # the server's is 1 and the client keeps this one itself)
    tools: ToolRules = field(default_factory=ToolRules)
    prompt_from_stdin: bool = False  # stdin held the prompt: no terminal to answer on
    images: tuple[Path, ...] = ()  # --image: attached to the prompt
    add_dirs: tuple[Path, ...] = ()  # --add-dir: more workspace roots (after ``workspace``)


@dataclass(frozen=True)
class ChatOptions:
    workspace: Path
    initialization_options: JSON
    resume: str | None
    notify: str = "bell"  # how a question or a finished turn is announced (chat/notify.py)
    add_dirs: tuple[Path, ...] = ()  # --add-dir: more workspace roots (after ``workspace``)
