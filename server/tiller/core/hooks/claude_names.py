"""Tiller's tools as Claude Code's hooks know them, so hook scripts written for Claude Code
work unchanged: their matchers name Claude Code's tools and they read Claude Code's input
fields. An ``updatedInput`` a hook returns is mapped back.

| Tiller | Claude Code | input fields (Tiller -> Claude Code) |
|---|---|---|
| read_file | Read | path -> file_path (absolute), offset, limit |
| write_file | Write | path -> file_path (absolute), content |
| edit_file | Edit | path -> file_path (absolute), old_string, new_string, replace_all |
| bash | Bash | command; timeout_seconds -> timeout (milliseconds) |
| grep | Grep | pattern, path (absolute), glob, ... |
| list_files | Glob | path (absolute), pattern |
| todo_write | TodoWrite | todos |
| exit_plan_mode | ExitPlanMode | plan |
| enter_plan_mode | EnterPlanMode | (none) |
| skill | Skill | name -> skill |
| mcp__server__tool | (the same) | (the same) |

Paths go to hooks absolute (Claude Code's tools take absolute paths); an absolute path under
the workspace comes back relative, any other as the hook wrote it (the tool then confines it).
"""

from __future__ import annotations

from pathlib import Path

from tiller.jsontypes import JSON

CLAUDE_NAMES: dict[str, str] = {
    "read_file": "Read",
    "write_file": "Write",
    "edit_file": "Edit",
    "bash": "Bash",
    "grep": "Grep",
    "list_files": "Glob",
    "todo_write": "TodoWrite",
    "exit_plan_mode": "ExitPlanMode",
    "enter_plan_mode": "EnterPlanMode",
    "skill": "Skill",
}
# Tiller field -> Claude Code field, per tool (fields not named pass unchanged).
_RENAMED: dict[str, dict[str, str]] = {
    "read_file": {"path": "file_path"},
    "write_file": {"path": "file_path"},
    "edit_file": {"path": "file_path"},
    "skill": {"name": "skill"},
}
_PATH_FIELDS = frozenset({"file_path", "path"})


def claude_name(tool: str) -> str:
    """The name a hook's matcher and ``tool_name`` see."""
    return CLAUDE_NAMES.get(tool, tool)


def to_claude_input(tool: str, tool_input: JSON, workspace: Path) -> JSON:
    """``tool_input`` as Claude Code's tool would have it."""
    renamed = _RENAMED.get(tool, {})
    out: JSON = {}
    for key, value in tool_input.items():
        name = renamed.get(key, key)
        if tool == "bash" and key == "timeout_seconds" and isinstance(value, int | float):
            out["timeout"] = int(value * 1000)
            continue
        if name in _PATH_FIELDS and isinstance(value, str) and tool in _HAS_PATHS:
            value = str(workspace / value) if value else str(workspace)
        out[name] = value
    if tool in ("list_files", "grep") and "path" not in out:
        out["path"] = str(workspace)
    return out


_HAS_PATHS = frozenset({"read_file", "write_file", "edit_file", "grep", "list_files"})


def from_claude_input(tool: str, claude_input: JSON, workspace: Path) -> JSON:
    """An ``updatedInput`` in Claude Code's fields, as the Tiller tool takes it."""
    back = {v: k for k, v in _RENAMED.get(tool, {}).items()}
    out: JSON = {}
    for key, value in claude_input.items():
        name = back.get(key, key)
        if tool == "bash" and key == "timeout" and isinstance(value, int | float):
            out["timeout_seconds"] = max(1, round(value / 1000))
            continue
        if key in _PATH_FIELDS and isinstance(value, str) and tool in _HAS_PATHS:
            value = _relative(value, workspace)
        out[name] = value
    return out


def _relative(path: str, workspace: Path) -> str:
    candidate = Path(path)
    if not candidate.is_absolute():
        return path
    try:
        relative = candidate.relative_to(workspace)
    except ValueError:
        return path
    return str(relative) if str(relative) != "." else "."
