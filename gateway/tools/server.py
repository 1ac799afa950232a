"""The MCP server object: the SDK's `MCPServer` with our tools, each published with strict arguments and the
engine's bounds in its `inputSchema` (`gateway.tools.arguments`), each call run through the one tool boundary
(`gateway.tools.boundary.ToolBoundary`), and `tools/list` showing a token only the tools its scopes allow."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, Icon, InputRequiredResult, ToolAnnotations
from mcp_types import Tool as MCPTool

from gateway.admin import register_selection_tools
from gateway.tools.admin import register_admin_tools
from gateway.tools.arguments import make_strict, publish_bounds
from gateway.tools.batch import register_batch_tools
from gateway.tools.boundary import RuntimeHolder, ToolBoundary, ToolPolicy, current_principal
from gateway.tools.debug import register_debug_tools
from gateway.tools.feedback import register_feedback_tools
from gateway.tools.memory import register_tools
from gateway.tools.reembed import register_reembed_tools
from gateway.tools.sessions import register_session_tools
from gateway.web.observability import Telemetry
from memory.validation import EngineLimits
from ops.version import VERSION
from tenancy import AuthenticationFailed

INSTRUCTIONS = (  # also what every tool's namespace and request_id mean: said here once, not in each tool
    "Long-term memory for this agent. Call recall_memory before answering when earlier conversations, user "
    "preferences or past decisions could matter; call write_memory for durable facts, decisions and "
    "preferences worth keeping. Your token decides which namespaces you can read and write (see whoami); leave "
    "namespace out for its default. A request_id is an idempotency key: a retry with the same one is done once."
)


class GatewayMCPServer(MCPServer):
    """Registers every tool with strict, bounded arguments and runs every call through the tool boundary."""

    def __init__(self, boundary: ToolBoundary, limits: EngineLimits, **kwargs: Any) -> None:
        self.boundary = boundary
        self.limits = limits
        super().__init__(**kwargs)

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
            description=description or " ".join((fn.__doc__ or "").split()),  # one line, not the docstring's indent
            annotations=annotations,
            icons=icons,
            meta=meta,
            structured_output=structured_output,
        )
        tool = self._tool_manager.get_tool(name or fn.__name__)
        if tool is not None:
            make_strict(tool)
            publish_bounds(tool.parameters, self.limits)

    def has_tool(self, name: str) -> bool:
        return self._tool_manager.get_tool(name) is not None

    def is_mutating(self, name: str) -> bool:
        """Whether the tool `name` changes anything (from its annotations); False for an unknown name."""
        tool = self._tool_manager.get_tool(name)
        return tool is not None and ToolPolicy.of(tool).mutating

    def call_units(self, name: str, arguments: object) -> int:
        """What a call costs in rate-limit tokens: the number of its items for a batch tool (one per item,
        `ToolPolicy.per_item`), else 1; read from the arguments as sent, before the tool checks them."""
        tool = self._tool_manager.get_tool(name)
        if tool is None or not ToolPolicy.of(tool).per_item or not isinstance(arguments, dict):
            return 1
        items = arguments.get("items")
        return max(1, len(items)) if isinstance(items, list) else 1

    async def list_tools(self) -> list[MCPTool]:
        """The tools the calling token's scopes allow (all of them outside a request: in-process use)."""
        tools = await super().list_tools()
        try:
            principal = current_principal()
        except AuthenticationFailed:
            return tools
        allowed = {
            tool.name for tool in self._tool_manager.list_tools() if principal.has_scope(ToolPolicy.of(tool).scope)
        }
        return [tool for tool in tools if tool.name in allowed]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult | InputRequiredResult:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            return await super().call_tool(name, arguments, context)  # the SDK's unknown-tool error
        return await self.boundary.call(tool, arguments)


def build_mcp_server(holder: RuntimeHolder, telemetry: Telemetry, limits: EngineLimits) -> GatewayMCPServer:
    server = GatewayMCPServer(
        ToolBoundary(holder, telemetry), limits, name="hindsight", instructions=INSTRUCTIONS, version=VERSION
    )
    register_tools(server)
    register_batch_tools(server)
    register_feedback_tools(server, telemetry.metrics)
    register_session_tools(server)
    register_admin_tools(server)
    register_selection_tools(server)
    register_debug_tools(server)
    register_reembed_tools(server)
    return server
