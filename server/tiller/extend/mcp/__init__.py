"""Tiller as an MCP client: where servers are configured (``config``), one server's life
(``server``), the servers of a workspace and a turn's tools (``manager``), MCP tools and
``tool_search`` (``tools``), and MCP content as the model gets it (``results``)."""
