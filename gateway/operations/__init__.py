"""Each operation's arguments declared once, as one typed model: a tool's input schema is made from it (`taking`),
the boundary checks calls against it strictly, and the engine request comes from it (`WriteArguments.request`,
`RecallArguments.request`). `write_memory` and every item of `write_memories` share `WriteArguments`."""

from gateway.operations.recall import RecallArguments
from gateway.operations.signature import taking
from gateway.operations.write import WriteArguments

__all__ = ["RecallArguments", "WriteArguments", "taking"]
