"""The memory engine: models, write and recall, working memory, embedders and stores.

It knows nothing of HTTP or JWT: every operation takes a `NamespaceScope` built by `tenancy/`. The write path is
`write/` (reading text with `pipeline/`), the recall path `recall/`, the text tools both share `text/`; the agent
loop is `agent/` over `events/` and `extraction/`; what happens to memories after they are written is
`lifecycle/`, `consolidation/` and `reembed/`; `stores/`, `embedders/`, `working/`, `recall_log/`, `locking/` and
`clients/` are the parts they run on (docs/DESIGN.md § "Shape").
"""

from memory.clock import Clock, ManualClock, SystemClock
from memory.errors import (
    BackendUnavailable,
    InvalidArgument,
    MemoryEngineError,
    NamespaceForbidden,
    NotFound,
    StoreConfigMismatch,
)
from memory.models import (
    Memory,
    MemoryKind,
    MemoryPage,
    RecallHit,
    ScoreParts,
    WorkingMemory,
    WriteOutcome,
    WriteStatus,
)
from memory.pipeline import PipelineSettings
from memory.ports import Embedder, VectorStore, WorkingMemoryStore
from memory.recall.scoring import ScoringWeights
from memory.requests import ListRequest, RecallRequest, StateUpdate, TurnRequest, WriteRequest
from memory.scope import NamespaceScope, validate_namespace
from memory.service import MemoryService
from memory.validation import EngineLimits, parse_instant
from memory.working.service import SessionService, TurnOutcome

__all__ = [
    "BackendUnavailable",
    "Clock",
    "Embedder",
    "EngineLimits",
    "InvalidArgument",
    "ListRequest",
    "ManualClock",
    "Memory",
    "MemoryEngineError",
    "MemoryKind",
    "MemoryPage",
    "MemoryService",
    "NamespaceForbidden",
    "NamespaceScope",
    "NotFound",
    "PipelineSettings",
    "RecallHit",
    "RecallRequest",
    "ScoreParts",
    "ScoringWeights",
    "SessionService",
    "StateUpdate",
    "StoreConfigMismatch",
    "SystemClock",
    "TurnOutcome",
    "TurnRequest",
    "VectorStore",
    "WorkingMemory",
    "WorkingMemoryStore",
    "WriteOutcome",
    "WriteRequest",
    "WriteStatus",
    "parse_instant",
    "validate_namespace",
]
