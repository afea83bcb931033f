"""Hooks in Claude Code's shape: as configured (``config``), the settings files' and the
session's (``session_hooks``), run (``run``) and their answers read (``replies``), Claude Code's
tool names and inputs (``claude_names``), and the stop hook (``stop``). The turn runs them
around tool calls (``core/turn/tool_hooks.py``) and tells what they did (``turn/hook_acts.py``)."""
