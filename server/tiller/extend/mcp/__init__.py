"""Tiller as an MCP client: where servers are configured (``config``), one server's life
(``server``), and the servers of a workspace (``manager``). The tools they offer, ``tool_search``
and MCP content as the model gets it live with every other tool: ``tools/mcp.py``,
``tools/mcp_results.py``."""
