"""What `explain` adds to a recall hit on the wire (`gateway.answers.serialize.hit_json`): the score's parts, and for a
semantic memory written by consolidation the number of episodes it was consolidated from."""

from __future__ import annotations

from gateway.answers.serialize import hit_json
from memory.models import MemoryKind, RecallHit, ScoreParts
from tests.memory.conftest import make_memory

PARTS = ScoreParts(similarity=0.9, recency=0.5, importance=0.6, access_frequency=0.0, score=0.7)


def test_explain_says_how_many_episodes_a_semantic_memory_was_consolidated_from() -> None:
    semantic = make_memory(
        "The user prefers concise answers", tenant="t", kind=MemoryKind.SEMANTIC, metadata={"sources": ["a", "b", "c"]}
    )
    episode = make_memory("The user asked again for shorter replies", tenant="t", metadata={"sources": ["x"]})

    explained = hit_json(RecallHit(semantic, PARTS), explain=True)
    plain = hit_json(RecallHit(semantic, PARTS))

    assert explained["scores"]["consolidated_from"] == 3
    assert "consolidated_from" not in hit_json(RecallHit(episode, PARTS), explain=True)["scores"]
    assert "scores" not in plain
