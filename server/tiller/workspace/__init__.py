"""The workspace layer: what the tools stand on and what is kept. Reading a command line
(``bash/``), file access confined to the workspace (``confined``), the workspace's folders
(``roots``), running a command (``sandbox``, ``supervisor``, ``supervised``, ``tool_env``),
checkpoints and rewind (``checkpoints/``), the session store and edit history (``store``,
``edit_history``), and the diagnostics types (``diagnostics``)."""
