"""Sessions: their life (``sessions``: create, resume, fork, slice, switch, close), one
session's live state (``session``), its slash commands (``commands``, ``session_commands``), its
journal and transcript, rewind, subagents (child sessions) and mentions."""
