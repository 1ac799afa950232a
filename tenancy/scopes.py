"""`scope_for`: the one place in the codebase that turns a verified `Principal` into a `NamespaceScope`.

Every store call takes a `NamespaceScope`; because only this function builds one (checked by
`tests/tenancy/test_architecture.py`), every read and write is bounded by a verified token's grants.
"""

from __future__ import annotations

from memory.scope import NamespaceScope
from tenancy.principal import SCOPE_ADMIN, Principal


def scope_for(principal: Principal) -> NamespaceScope:
    """The namespaces `principal` may read and write inside its tenant; `memory:admin` grants all of them.

    Raises `memory.errors.InvalidArgument` if the principal's tenant or namespaces are malformed (a principal
    built by `tenancy.claims` never is).
    """
    return NamespaceScope(
        tenant=principal.tenant,
        readable=principal.read_namespaces,
        writable=principal.write_namespaces,
        admin=principal.has_scope(SCOPE_ADMIN),
    )
