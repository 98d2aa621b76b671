"""The MCP server: the library from any assistant (`paperchat mcp`)."""
