"""Every tool the model can call, and the one registry that offers them (``registry``).

The built-in tools (``files``, ``search``, ``shell``, ``todo``, ``plan``), the ``skill`` tool,
the ``task`` tool (a subagent, run by core through the ``Delegation`` it is given) and the
tools of MCP servers (``mcp``, ``mcp_results``). A tool says what it is (``base.Tool``); the
mechanisms it stands on live below: ``workspace.confined`` (file access), ``workspace.bash``
(reading a command line), ``workspace.sandbox`` and ``workspace.supervisor`` (running one),
``extend`` (skills, MCP servers). Core decides whether a call may run; a tool only runs it."""
