"""Selecting memories across a tenant's namespaces (`memory.selection`): by writer, tag or metadata value, listed a
bounded number at a time, forgotten with their copies (restorable, the admin and the selection in the reason).
Real engine and embedder."""

from __future__ import annotations

import pytest

from memory.errors import InvalidArgument, NamespaceForbidden
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
from memory.selection import Selection, forget_selected, select_page
from memory.service import MemoryService
from tests.memory.conftest import scope

pytestmark = pytest.mark.anyio

NAMESPACES = ["user:1", "user:2", "shared:t"]


@pytest.fixture
def writer(acme: str) -> NamespaceScope:
    return scope(acme, read=NAMESPACES, write=NAMESPACES)


async def write(service: MemoryService, who: NamespaceScope, content: str, subject: str, **kwargs: object) -> str:
    outcome = await service.write(who, WriteRequest(content=content, subject=subject, **kwargs))  # type: ignore[arg-type]
    assert outcome.id is not None
    return outcome.id


@pytest.fixture
async def written(service: MemoryService, writer: NamespaceScope) -> dict[str, str]:
    """Mallory's memories in two namespaces (one shared on to a third), beside Alice's."""
    return {
        "m1": await write(service, writer, "Mallory parks the blue van by gate four", "mallory", namespace="user:1"),
        "m2": await write(
            service,
            writer,
            "Mallory's badge number is 7731",
            "mallory",
            namespace="user:2",
            share_to=["shared:t"],
            tags=["badge"],
        ),
        "a1": await write(
            service, writer, "Alice waters the ferns on Fridays", "alice", namespace="user:1", metadata={"crm": "c-9"}
        ),
        "a2": await write(service, writer, "Alice's badge number is 1204", "alice", namespace="user:2", tags=["badge"]),
    }


def test_a_selection_needs_a_criterion_and_well_formed_values() -> None:
    for bad in [
        {},
        {"metadata_key": "crm"},
        {"metadata_key": "a.b", "metadata_value": "x"},
        {"written_by": ""},
        {"tag": "x" * 300},
        {"metadata_key": "crm", "metadata_value": ["a"]},
    ]:
        with pytest.raises(InvalidArgument):
            Selection(**bad)  # type: ignore[arg-type]
    assert Selection(written_by="mallory", tag="badge").describe() == "written by mallory, tagged badge"


async def test_a_subject_s_memories_are_listed_from_every_namespace_and_no_one_else_s(
    service: MemoryService, admin: NamespaceScope, written: dict[str, str]
) -> None:
    page = await select_page(service, admin, Selection(written_by="mallory"))
    assert {m.namespace for m in page.memories} == {"user:1", "user:2", "shared:t"}
    assert {m.source.subject for m in page.memories} == {"mallory"}
    assert page.next_cursor is None and page.scanned == 5


async def test_criteria_combine_and_metadata_values_select(
    service: MemoryService, admin: NamespaceScope, written: dict[str, str]
) -> None:
    badges = await select_page(service, admin, Selection(written_by="alice", tag="badge"))
    crm = await select_page(service, admin, Selection(metadata_key="crm", metadata_value="c-9"))
    assert [m.id for m in badges.memories] == [written["a2"]]
    assert [m.id for m in crm.memories] == [written["a1"]]


async def test_a_call_reads_a_bounded_number_and_the_cursor_goes_on_where_it_stopped(
    service: MemoryService, admin: NamespaceScope, written: dict[str, str]
) -> None:
    seen, cursor, calls = [], None, 0
    while True:
        page = await select_page(service, admin, Selection(written_by="mallory"), cursor, scan_limit=2)
        assert page.scanned <= 2
        seen += [m.id for m in page.memories]
        calls += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert calls == 3 and len(seen) == 3 and len(set(seen)) == 3


async def test_forgetting_a_selection_forgets_copies_names_the_admin_and_is_restorable(
    service: MemoryService, admin: NamespaceScope, writer: NamespaceScope, written: dict[str, str]
) -> None:
    report = await forget_selected(service, admin, Selection(written_by="mallory"), "ops")
    assert dict(report.forgotten) == {"user:1": 1, "user:2": 1, "shared:t": 1} and report.next_cursor is None
    again = await forget_selected(service, admin, Selection(written_by="mallory"), "ops")
    assert not again.forgotten and again.already == 3
    listed = (await select_page(service, admin, Selection(written_by="mallory"))).memories
    assert all(m.deleted_at is not None for m in listed)
    assert {m.delete_reason for m in listed} == {"forgotten by admin ops: written by mallory"}
    assert (await service.get(writer, written["a1"])).deleted_at is None
    await service.restore(admin, written["m2"])
    assert (await service.get(writer, written["m2"])).deleted_at is None


async def test_only_an_admin_selects_across_namespaces(
    service: MemoryService, writer: NamespaceScope, written: dict[str, str]
) -> None:
    with pytest.raises(NamespaceForbidden):
        await select_page(service, writer, Selection(written_by="mallory"))
    with pytest.raises(NamespaceForbidden):
        await forget_selected(service, writer, Selection(written_by="mallory"), "agent")
