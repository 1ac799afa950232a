"""The two tenants of the fairness stage (`bench.fairness`) and what they write and ask: their tokens
(`tenant_token`), the seeded memories (`memory_text`, `seed`), and the expensive recall the attacker sends, each
value cut to the largest the gateway publishes in `tools/list` (`published_bounds`, `attack_arguments`)."""

from __future__ import annotations

import random
from typing import Any

import anyio
import httpx2

from bench.raw_mcp import HEADERS, request, tool_call
from tenancy import mint_token

SECRET = "bench-fairness-secret-0123456789abcdef"
VICTIM, ATTACKER = "victim", "hostile"
QUERY_CHARS, TOP_K, TOKEN_BUDGET = 7_900, 100, 100_000  # the expensive recall, before the bounds

_VOCABULARY = (
    "deploy server region cluster budget review design launch customer invoice contract meeting schedule "
    "database migration backup release feature roadmap quarter metrics latency outage incident report "
    "team hiring interview offer salary travel flight hotel conference talk slides paper draft editor "
    "deadline garden kitchen recipe dinner coffee tea running cycling swimming piano guitar novel film "
    "series museum"
)
_WORDS = _VOCABULARY.split()
_PEOPLE = ("Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Julia")


def tenant_token(tenant: str, subject: str) -> str:
    ns = f"user:{tenant}"
    return mint_token(SECRET, tenant=tenant, subject=subject, read=[ns], write=[ns], ttl_seconds=7200)


def _sentence(rng: random.Random, i: int) -> str:
    words = rng.sample(_WORDS, 6)
    person = rng.choice(_PEOPLE)
    return (
        f"On day {i % 28 + 1} {person} talked about the {words[0]} {words[1]} and the {words[2]}, then decided to "
        f"move the {words[3]} {words[4]} before the {words[5]} review number {i}."
    )


def memory_text(rng: random.Random, i: int, chars: int) -> str:
    parts: list[str] = []
    while sum(len(p) + 1 for p in parts) < chars:
        parts.append(_sentence(rng, i * 31 + len(parts)))
    return " ".join(parts)[:chars]


def expensive_query(rng: random.Random, chars: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(chars // 4))[:chars].strip()


# -- seeding ---------------------------------------------------------------------------------------------------
async def seed(url: str, victim_memories: int, attacker_memories: int) -> None:
    """The victim's facts and the attacker's corpus, written over MCP (batches of 64 by a seeding subject of each
    tenant, waiting out the write buckets: a batch from a full bucket goes through and leaves it in debt)."""
    rng = random.Random(7)
    victim = ["The user's deploy target is AWS eu-west-1", "The user prefers short answers without preamble"]
    victim += [memory_text(rng, i, 160) for i in range(victim_memories - len(victim))]
    attacker = [memory_text(rng, 1000 + i, 700) for i in range(attacker_memories)]
    async with httpx2.AsyncClient(headers=HEADERS, timeout=300.0) as http:
        for tenant, texts in ((VICTIM, victim), (ATTACKER, attacker)):
            for n, start in enumerate(range(0, len(texts), 64)):
                items = [{"content": text} for text in texts[start : start + 64]]
                token = tenant_token(tenant, f"{tenant}-seeder-{n}")  # a fresh subject: a full write bucket
                while True:
                    answer = await http.post(
                        url,
                        content=tool_call("write_memories", {"items": items}),
                        headers={"authorization": f"Bearer {token}"},
                    )
                    if answer.status_code != 429:
                        break
                    await anyio.sleep(float(answer.headers.get("retry-after", "1")))
                if answer.status_code != 200 or b'"isError":true' in answer.content:
                    raise RuntimeError(f"seeding {tenant} failed: {answer.status_code} {answer.text[:300]}")


async def published_bounds(url: str) -> dict[str, dict[str, Any]]:
    """The recall_memory argument schemas as `tools/list` publishes them."""
    body = request("tools/list", {})
    async with httpx2.AsyncClient(headers=HEADERS, timeout=60.0) as http:
        answer = await http.post(
            url, content=body, headers={"authorization": f"Bearer {tenant_token(VICTIM, 'lister')}"}
        )
    tools = answer.json()["result"]["tools"]
    [recall] = [tool for tool in tools if tool["name"] == "recall_memory"]
    properties: dict[str, dict[str, Any]] = recall["inputSchema"]["properties"]
    return properties


def attack_arguments(bounds: dict[str, dict[str, Any]], rng: random.Random) -> dict[str, Any]:
    """The issue's expensive recall, each value cut to the largest the schema allows."""
    chars = min(QUERY_CHARS, bounds["query"].get("maxLength", QUERY_CHARS))
    return {
        "query": expensive_query(rng, chars),
        "top_k": min(TOP_K, bounds["top_k"].get("maximum", TOP_K)),
        "format": "context",
        "token_budget": min(TOKEN_BUDGET, bounds["token_budget"].get("maximum", TOKEN_BUDGET)),
        "include_archived": True,
        "include_superseded": True,
        "explain": True,
        "detail": "full",
    }
