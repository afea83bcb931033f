"""The core: sessions and their turns (session, sessions, loop and its steps, history,
compaction, slicing), the typed events and their journal, permissions, the plan gate, slash
commands. It knows no protocol and no SDK: it talks to a model through ``tiller.model`` and to
the workspace through ``tiller.workspace``."""
