"""Namespace lifecycle for admins: export, import (re-embedded), purge; sharing with linked copies; audit."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.applications import Starlette

from ops.config import Settings
from tests.conftest import Mint, data, error_code, mcp_session

pytestmark = pytest.mark.anyio


async def test_export_then_import_into_another_namespace_round_trips(app: Starlette, mint: Mint) -> None:
    admin = mint(tenant="acme", sub="ops", read=[], write=[], admin=True)
    async with mcp_session(app, mint(tenant="acme", read=["user:1"], write=["user:1"])) as client:
        for i in range(5):
            data(await client.call_tool("write_memory", {"content": f"Exported fact {i}", "tags": [f"t{i}"]}))
        gone = data(await client.call_tool("write_memory", {"content": "A forgotten fact"}))
        data(await client.call_tool("forget_memory", {"id": gone["id"]}))
    async with mcp_session(app, admin) as client:
        exported = data(await client.call_tool("export_memories", {"namespace": "user:1", "limit": 200}))
        records = exported["records"]
        imported = data(await client.call_tool("import_memories", {"namespace": "user:2", "records": records}))
        again = data(await client.call_tool("import_memories", {"namespace": "user:2", "records": records}))
        copy = data(await client.call_tool("list_memories", {"namespace": "user:2", "include_deleted": True}))
    assert len(records) == 6
    assert all("content" in r and "source" in r for r in records)
    assert imported["imported"] == 6
    assert again == {"status": "imported", "namespace": "user:2", "imported": 0, "skipped": 6}
    assert sorted(m["content"] for m in copy["memories"]) == sorted(r["content"] for r in records)
    assert [m["tags"] for m in copy["memories"] if m["content"] == "Exported fact 3"] == [["t3"]]
    assert [m["deleted_at"] is not None for m in copy["memories"] if m["content"] == "A forgotten fact"] == [True]


async def test_an_import_keeps_each_record_s_author_and_records_the_admin_who_imported_it(
    app: Starlette, mint: Mint
) -> None:
    async with mcp_session(app, mint(tenant="acme", sub="alice", read=["user:1"], write=["user:1"])) as client:
        data(await client.call_tool("write_memory", {"content": "Alice keeps bees on the roof"}))
    admin = mint(tenant="acme", sub="ops", read=[], write=[], admin=True)
    async with mcp_session(app, admin) as client:
        records = data(await client.call_tool("export_memories", {"namespace": "user:1"}))["records"]
        records.append({"content": "A line that names no author"})
        data(await client.call_tool("import_memories", {"namespace": "shared:t", "records": records}))
        forged = await client.call_tool(
            "import_memories", {"namespace": "shared:t", "records": [{"content": "x", "source": {"subject": ""}}]}
        )
    async with mcp_session(app, mint(tenant="acme", sub="bob", read=["shared:t"], write=[])) as client:
        listed = data(await client.call_tool("list_memories", {"namespace": "shared:t"}))["memories"]
        hits = data(await client.call_tool("recall_memory", {"query": "bees on the roof", "namespaces": ["shared:t"]}))
    sources = {m["content"]: m["source"] for m in listed}
    assert sources["Alice keeps bees on the roof"]["subject"] == "alice"
    assert sources["Alice keeps bees on the roof"]["importer"] == "ops"
    assert sources["A line that names no author"]["subject"] == "ops"
    assert error_code(forged) == "invalid_argument"
    assert hits["memories"][0]["author"] == "alice"


async def test_purge_hard_deletes_one_namespace_only_for_admins(app: Starlette, mint: Mint) -> None:
    user = mint(tenant="acme", read=["user:1", "user:2"], write=["user:1", "user:2"])
    async with mcp_session(app, user) as client:
        data(await client.call_tool("write_memory", {"content": "to be purged", "namespace": "user:1"}))
        data(await client.call_tool("write_memory", {"content": "to be kept", "namespace": "user:2"}))
        refused = await client.call_tool("purge_namespace", {"namespace": "user:1", "confirm": "user:1"})
    assert error_code(refused) == "scope_forbidden"
    async with mcp_session(app, mint(tenant="acme", sub="ops", read=[], write=[], admin=True)) as client:
        unconfirmed = await client.call_tool("purge_namespace", {"namespace": "user:1", "confirm": "user:2"})
        purged = data(await client.call_tool("purge_namespace", {"namespace": "user:1", "confirm": "user:1"}))
    assert error_code(unconfirmed) == "invalid_argument"
    receipt = purged.pop("receipt")
    assert (receipt["by"], receipt["namespace"], receipt["removed"]["memories"]) == ("ops", "user:1", 1)
    assert purged == {
        "status": "purged",
        "namespace": "user:1",
        "deleted": 1,
        "events_deleted": 0,
        "sessions_deleted": 0,
    }
    async with mcp_session(app, user) as client:
        left = data(await client.call_tool("list_memories", {"include_deleted": True}))
    assert [m["content"] for m in left["memories"]] == ["to be kept"]


async def test_an_admin_of_one_tenant_cannot_purge_another_tenants_namespace(app: Starlette, mint: Mint) -> None:
    async with mcp_session(app, mint(tenant="acme")) as client:
        data(await client.call_tool("write_memory", {"content": "acme data"}))
    async with mcp_session(app, mint(tenant="globex", sub="ops", admin=True)) as client:
        purged = data(await client.call_tool("purge_namespace", {"namespace": "user:1", "confirm": "user:1"}))
    assert purged["deleted"] == 0
    async with mcp_session(app, mint(tenant="acme")) as client:
        assert len(data(await client.call_tool("list_memories", {}))["memories"]) == 1


async def test_share_to_writes_linked_copies_recalled_once_and_forgotten_together(app: Starlette, mint: Mint) -> None:
    alice = mint(tenant="acme", sub="alice", read=["user:a", "shared:t"], write=["user:a", "shared:t"])
    bob = mint(tenant="acme", sub="bob", read=["user:b", "shared:t"], write=["user:b"])
    async with mcp_session(app, alice) as client:
        written = data(
            await client.call_tool(
                "write_memory", {"content": "The launch moved to June 3rd", "share_to": ["shared:t"]}
            )
        )
        alice_hits = data(await client.call_tool("recall_memory", {"query": "launch date", "detail": "full"}))
        forbidden = await client.call_tool("write_memory", {"content": "nope", "share_to": ["shared:other"]})
    async with mcp_session(app, bob) as client:
        bob_hits = data(await client.call_tool("recall_memory", {"query": "launch date", "detail": "full"}))
    assert [h["origin_id"] or h["id"] for h in alice_hits["memories"]] == [written["id"]]  # one hit per origin
    [bob_hit] = bob_hits["memories"]
    assert bob_hit["content"] == "The launch moved to June 3rd" and bob_hit["namespace"] == "shared:t"
    assert bob_hit["origin_id"] is None  # bob cannot read user:a, so the private origin is not named
    assert error_code(forbidden) == "namespace_forbidden"
    async with mcp_session(app, alice) as client:
        data(await client.call_tool("forget_memory", {"id": written["id"]}))
        listed = data(await client.call_tool("list_memories", {}))
    assert listed["memories"] == []
    async with mcp_session(app, bob) as client:
        assert data(await client.call_tool("recall_memory", {"query": "launch date"}))["memories"] == []


async def test_every_mutating_call_logs_one_content_free_audit_event(
    app: Starlette, mint: Mint, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hindsight.audit")
    async with mcp_session(app, mint(tenant="acme", sub="agent-9")) as client:
        written = data(await client.call_tool("write_memory", {"content": "Top secret recipe", "request_id": "req-1"}))
        data(await client.call_tool("recall_memory", {"query": "recipe"}))
        await client.call_tool("forget_memory", {"id": "01890a5d-ac96-774b-bcce-b302099a8057"})
    events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "hindsight.audit"]
    assert [(e["tool"], e["outcome"]) for e in events] == [("write_memory", "created"), ("forget_memory", "not_found")]
    first = events[0]
    assert first["tenant"] == "acme"
    assert first["subject"] == "agent-9"
    assert first["ids"] == [written["id"]]
    assert first["namespace"] == "user:1"
    assert first["request_id"] == "req-1"
    assert "Top secret" not in json.dumps(events)


def test_cli_export_import_select_forget_and_purge_work_in_direct_mode(
    tmp_path: Path, mint: Mint, settings: Settings
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env |= {"HINDSIGHT_DATA_DIR": str(tmp_path / "data")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "gateway.cli", *args], env=env, capture_output=True, text=True, cwd=tmp_path
        )

    source = tmp_path / "in.jsonl"
    authors = [{"subject": "mallory"}, None, None]  # the first record names its author, the others none
    records = [{"content": f"Imported line {i}", "source": author} for i, author in enumerate(authors)]
    source.write_text("\n".join(json.dumps(record) for record in records) + "\n")
    imported = cli("import", "--tenant", "acme", "--namespace", "user:1", str(source))
    assert imported.returncode == 0, imported.stderr
    assert "imported 3" in imported.stderr
    exported = cli("export", "--tenant", "acme", "--namespace", "user:1", "--out", str(tmp_path / "out.jsonl"))
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert sorted(r["content"] for r in lines) == [f"Imported line {i}" for i in range(3)]
    selected = cli("select", "--tenant", "acme", "--written-by", "mallory")
    assert selected.returncode == 0, selected.stderr
    assert [json.loads(x)["content"] for x in selected.stdout.splitlines()] == ["Imported line 0"]
    forgotten = cli("forget-selected", "--tenant", "acme", "--written-by", "mallory")
    assert forgotten.returncode == 0, forgotten.stderr
    assert json.loads(forgotten.stdout) == {"forgotten": {"user:1": 1}, "already_forgotten": 0}
    assert cli("forget-selected", "--tenant", "acme").returncode != 0  # no criterion: refused, nothing forgotten
    assert cli("erase", "--tenant", "acme", "--written-by", "mallory").returncode == 2  # not confirmed
    erased = cli("erase", "--tenant", "acme", "--written-by", "mallory", "--confirm", "mallory")
    assert erased.returncode == 0, erased.stderr
    assert json.loads(erased.stdout)["removed"]["memories"] == 1
    refused = cli("purge", "--tenant", "acme", "--namespace", "user:1")
    assert refused.returncode == 2
    purged = cli("purge", "--tenant", "acme", "--namespace", "user:1", "--confirm", "user:1")
    assert purged.returncode == 0, purged.stderr
    assert "purged 2" in purged.stderr
    assert json.loads(purged.stdout)["removed"]["memories"] == 2 and json.loads(purged.stdout)["by"] == "hindsight-cli"


async def test_export_purge_import_restores_a_namespace_with_its_metadata(app: Starlette, mint: Mint) -> None:
    admin = mint(tenant="acme", sub="ops", read=[], write=[], admin=True)
    async with mcp_session(app, mint()) as client:
        for i in range(4):
            data(
                await client.call_tool(
                    "write_memory",
                    {
                        "content": f"Restorable fact {i}",
                        "tags": ["a", f"n{i}"],
                        "importance": 0.1 * (i + 1),
                        "metadata": {"source": "crm", "row": i},
                        "kind": "semantic" if i % 2 else "episodic",
                        "session_id": "sess-1",
                        "occurred_at": f"2026-0{i + 1}-01T10:00:00Z",
                    },
                )
            )
    keys = ("content", "tags", "importance", "metadata", "kind", "session_id", "created_at", "deleted_at")

    def essence(records: list[dict[str, object]]) -> list[tuple[object, ...]]:
        return sorted(tuple(str(r[k]) for k in keys) for r in records)

    async with mcp_session(app, admin) as client:
        before = data(await client.call_tool("export_memories", {"namespace": "user:1"}))["records"]
        data(await client.call_tool("purge_namespace", {"namespace": "user:1", "confirm": "user:1"}))
        emptied = data(await client.call_tool("export_memories", {"namespace": "user:1"}))["records"]
        data(await client.call_tool("import_memories", {"namespace": "user:1", "records": before}))
        after = data(await client.call_tool("export_memories", {"namespace": "user:1"}))["records"]
    assert emptied == []
    assert len(before) == 4
    assert essence(after) == essence(before)


async def test_share_to_an_unwritable_namespace_writes_nothing_anywhere(app: Starlette, mint: Mint) -> None:
    token = mint(tenant="acme", read=["user:1", "shared:t"], write=["user:1"])
    async with mcp_session(app, token) as client:
        refused = await client.call_tool("write_memory", {"content": "shared secret", "share_to": ["shared:t"]})
        listed = data(await client.call_tool("list_memories", {"include_deleted": True}))
    assert error_code(refused) == "namespace_forbidden"
    assert listed["memories"] == []


async def test_consolidate_tool_writes_semantic_memories_for_admins_only(app: Starlette, mint: Mint) -> None:
    user = mint()
    async with mcp_session(app, user) as client:
        for text in (
            "The user drinks a double espresso every morning",
            "The user likes espresso with no sugar in the morning",
            "Every morning the user orders an espresso",
        ):
            data(await client.call_tool("write_memory", {"content": text}))
        refused = await client.call_tool("consolidate", {"namespace": "user:1"})
    async with mcp_session(app, mint(sub="ops", read=[], write=[], admin=True)) as client:
        result = data(await client.call_tool("consolidate", {"namespace": "user:1"}))
    assert error_code(refused) == "scope_forbidden"
    assert result["clusters"] == 1 and len(result["written"]) == 1
    async with mcp_session(app, user) as client:
        hits = data(
            await client.call_tool("recall_memory", {"query": "morning drink", "kinds": ["semantic"], "detail": "full"})
        )
    assert [h["id"] for h in hits["memories"]] == result["written"]
    assert len(hits["memories"][0]["metadata"]["sources"]) == 3


def test_cli_maintain_expires_memories_in_direct_mode(tmp_path: Path, mint: Mint) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env |= {"HINDSIGHT_DATA_DIR": str(tmp_path / "data")}
    source = tmp_path / "in.jsonl"
    source.write_text(
        json.dumps({"content": "Door code 4417 until Friday", "created_at": "2020-01-01T00:00:00Z"}) + "\n"
    )
    imported = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "import", "--tenant", "acme", "--namespace", "user:1", str(source)],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert imported.returncode == 0, imported.stderr
    result = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "maintain", "--tenant", "acme"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["acme"]["namespaces"] == 1
