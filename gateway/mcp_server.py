"""The MCP server object: the SDK's `MCPServer` with our tools, strict arguments for every tool
(`gateway.arguments`), and argument errors answered as the stable `invalid_argument` tool error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, Icon, InputRequiredResult, ToolAnnotations
from pydantic import ValidationError

from gateway.admin_tools import register_admin_tools
from gateway.arguments import argument_problems, make_strict, validation_problems
from gateway.observability import Telemetry
from gateway.tool_support import RuntimeHolder, ToolRunner, invalid_arguments
from gateway.tools import register_tools

INSTRUCTIONS = (
    "Long-term memory for this agent. Call recall_memory before answering when earlier conversations, user "
    "preferences or past decisions could matter; call write_memory for durable facts, decisions and "
    "preferences worth keeping. Your token decides which namespaces you can read and write (see whoami)."
)


class GatewayMCPServer(MCPServer):
    """Registers every tool with strict arguments and answers argument failures with `invalid_argument`."""

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        super().add_tool(
            fn,
            name=name,
            title=title,
            description=description,
            annotations=annotations,
            icons=icons,
            meta=meta,
            structured_output=structured_output,
        )
        tool = self._tool_manager.get_tool(name or fn.__name__)
        if tool is not None:
            make_strict(tool)

    def has_tool(self, name: str) -> bool:
        return self._tool_manager.get_tool(name) is not None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult | InputRequiredResult:
        if problems := argument_problems(arguments):
            return invalid_arguments(name, problems)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return invalid_arguments(name, validation_problems(exc.__cause__))
            raise


def build_mcp_server(holder: RuntimeHolder, telemetry: Telemetry) -> GatewayMCPServer:
    server = GatewayMCPServer(name="hindsight", instructions=INSTRUCTIONS, version="0.1.0")
    runner = ToolRunner(holder, telemetry)
    register_tools(server, runner)
    register_admin_tools(server, runner)
    return server
