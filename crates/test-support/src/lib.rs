//! Fixture MCP servers.
