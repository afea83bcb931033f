"""What users bring from other agents: MCP servers, hooks, instruction files, custom commands,
skills and custom agents."""
