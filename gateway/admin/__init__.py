"""Admin tools that act across a tenant's namespaces (`memory:admin`): listing and forgetting what one subject
wrote, or what carries a tag or a metadata value (`gateway.admin.selection`)."""

from gateway.admin.selection import register_selection_tools

__all__ = ["register_selection_tools"]
