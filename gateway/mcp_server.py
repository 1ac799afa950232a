"""The MCP server object: the SDK's `MCPServer` with our tools and argument errors mapped to `invalid_argument`."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

from gateway.admin_tools import register_admin_tools
from gateway.observability import Telemetry
from gateway.tool_support import RuntimeHolder, ToolRunner, invalid_arguments
from gateway.tools import register_tools

INSTRUCTIONS = (
    "Long-term memory for this agent. Call recall_memory before answering when earlier conversations, user "
    "preferences or past decisions could matter; call write_memory for durable facts, decisions and "
    "preferences worth keeping. Your token decides which namespaces you can read and write (see whoami)."
)


class GatewayMCPServer(MCPServer):
    """Answers argument validation failures with the stable `invalid_argument` tool error."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                problems = sorted({f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in cause.errors()})
                return invalid_arguments(name, problems)
            raise


def build_mcp_server(holder: RuntimeHolder, telemetry: Telemetry) -> GatewayMCPServer:
    server = GatewayMCPServer(name="hindsight", instructions=INSTRUCTIONS, version="0.1.0")
    runner = ToolRunner(holder, telemetry)
    register_tools(server, runner)
    register_admin_tools(server, runner)
    return server
