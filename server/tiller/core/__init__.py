"""The core: the conversation. ``session/`` (sessions and their commands), ``turn/`` (one turn:
the loop, its steps and events), ``permissions/`` (modes and rules), ``hooks/`` (Claude Code's
hooks), and ``config.py`` (the validated settings). It knows no protocol and no SDK: it talks to
a model through ``tiller.model`` and to the workspace through ``tiller.workspace``."""
