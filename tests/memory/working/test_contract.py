"""The `WorkingMemoryStore` contract, run against `InProcessWorkingMemory` and `RedisWorkingMemory` (on a real
redis-server and on a real Redis Cluster), on a `ManualClock`. Plus Redis fault behaviour: a stopped server is
`BackendUnavailable`, and the same client works again once the server is back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import anyio
import pytest
import redis.asyncio
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from memory.clock import ManualClock
from memory.errors import BackendUnavailable, NamespaceForbidden
from memory.models import Turn
from memory.ports import WorkingMemoryStore
from memory.scope import NamespaceScope
from memory.working.in_process import InProcessWorkingMemory
from memory.working.redis_store import RedisWorkingMemory
from tests.memory.conftest import START, scope
from tests.redis_server import RedisServer, RedisTarget

pytestmark = pytest.mark.anyio

TTL = 3600


def fast_failing_client(url: str) -> redis.asyncio.Redis:
    """A client that reports a dead server at once instead of retrying for seconds."""
    return redis.asyncio.Redis.from_url(url, retry=Retry(NoBackoff(), 0), socket_timeout=2, socket_connect_timeout=2)


@pytest.fixture(params=["in_process", "redis", "redis_cluster"])
async def working(request: pytest.FixtureRequest, clock: ManualClock) -> AsyncIterator[WorkingMemoryStore]:
    store: WorkingMemoryStore
    if request.param == "in_process":
        store = InProcessWorkingMemory(clock)
    elif request.param == "redis":
        store = RedisWorkingMemory(RedisTarget(request.getfixturevalue("redis_url"), cluster=False).client(), clock)
    else:
        target = RedisTarget(request.getfixturevalue("redis_cluster_url"), cluster=True)
        store = RedisWorkingMemory(target.client(), clock)
    yield store
    await store.close()


@pytest.fixture
def me(acme: str) -> NamespaceScope:
    return scope(acme, read=["shared:team"], write=["user:1"])


def turn(n: int) -> Turn:
    return Turn(role="user", content=f"turn {n}", occurred_at=START + timedelta(seconds=n))


async def test_a_session_nobody_wrote_reads_as_none(working: WorkingMemoryStore, me: NamespaceScope) -> None:
    assert await working.get(me, "user:1", "never-written") is None


async def test_turns_beyond_the_window_are_evicted_and_returned_oldest_first(
    working: WorkingMemoryStore, me: NamespaceScope
) -> None:
    evictions = []
    for n in range(5):
        _, evicted = await working.append_turn(me, "user:1", "s1", turn(n), window=3, ttl_seconds=TTL)
        evictions.append(evicted)
    assert evictions == [[], [], [], [turn(0)], [turn(1)]]

    session, evicted = await working.append_turn(me, "user:1", "s1", turn(5), window=1, ttl_seconds=TTL)

    assert evicted == [turn(2), turn(3), turn(4)]
    assert session.turns == [turn(5)]
    stored = await working.get(me, "user:1", "s1")
    assert stored is not None
    assert stored.turns == [turn(5)]
    assert (stored.session_id, stored.namespace) == ("s1", "user:1")


async def test_the_window_holds_turns_in_the_order_they_were_appended(
    working: WorkingMemoryStore, me: NamespaceScope
) -> None:
    for n in range(4):
        session, _ = await working.append_turn(me, "user:1", "s1", turn(n), window=10, ttl_seconds=TTL)
    assert session.turns == [turn(0), turn(1), turn(2), turn(3)]
    assert session.state == {}


async def test_a_merge_deep_merges_nested_objects_and_none_deletes_a_key(
    working: WorkingMemoryStore, me: NamespaceScope
) -> None:
    initial = {"user": {"name": "Ada", "lang": "en"}, "topic": "billing", "steps": [1, 2]}
    await working.update_state(me, "user:1", "s1", initial, merge=False, ttl_seconds=TTL)

    session = await working.update_state(
        me, "user:1", "s1", {"user": {"lang": "fr", "tz": "CET"}, "topic": None, "steps": [3]}, True, TTL
    )

    expected = {"user": {"name": "Ada", "lang": "fr", "tz": "CET"}, "steps": [3]}
    assert session.state == expected
    stored = await working.get(me, "user:1", "s1")
    assert stored is not None
    assert stored.state == expected


async def test_a_replace_overwrites_the_whole_state_and_keeps_the_turns(
    working: WorkingMemoryStore, me: NamespaceScope
) -> None:
    await working.append_turn(me, "user:1", "s1", turn(0), window=10, ttl_seconds=TTL)
    await working.update_state(me, "user:1", "s1", {"a": 1, "b": {"c": 2}}, merge=True, ttl_seconds=TTL)

    session = await working.update_state(me, "user:1", "s1", {"z": 26}, merge=False, ttl_seconds=TTL)

    assert session.state == {"z": 26}
    assert session.turns == [turn(0)]


async def test_a_session_expires_ttl_seconds_after_its_last_write(
    working: WorkingMemoryStore, me: NamespaceScope, clock: ManualClock
) -> None:
    session, _ = await working.append_turn(me, "user:1", "s1", turn(0), window=10, ttl_seconds=60)
    assert session.expires_at == clock.now() + timedelta(seconds=60)
    clock.advance(59)
    refreshed = await working.update_state(me, "user:1", "s1", {"k": "v"}, merge=True, ttl_seconds=60)
    assert refreshed.expires_at == clock.now() + timedelta(seconds=60)
    clock.advance(59)
    assert await working.get(me, "user:1", "s1") is not None

    clock.advance(1)

    assert await working.get(me, "user:1", "s1") is None


async def test_a_write_after_expiry_starts_an_empty_session(
    working: WorkingMemoryStore, me: NamespaceScope, clock: ManualClock
) -> None:
    await working.append_turn(me, "user:1", "s1", turn(0), window=10, ttl_seconds=60)
    await working.update_state(me, "user:1", "s1", {"old": True}, merge=True, ttl_seconds=60)
    clock.advance(61)

    after_turn, evicted = await working.append_turn(me, "user:1", "s1", turn(1), window=10, ttl_seconds=60)
    assert (after_turn.turns, after_turn.state, evicted) == ([turn(1)], {}, [])

    clock.advance(61)
    after_state = await working.update_state(me, "user:1", "s1", {"new": True}, merge=True, ttl_seconds=60)
    assert (after_state.turns, after_state.state) == ([], {"new": True})


async def test_tenants_and_namespaces_never_share_a_session(
    working: WorkingMemoryStore, acme: str, globex: str
) -> None:
    acme_scope = scope(acme, write=["user:1", "user:2", "user"])
    globex_scope = scope(globex, write=["user:1"])
    await working.update_state(acme_scope, "user:1", "s1", {"who": "acme user:1"}, merge=False, ttl_seconds=TTL)
    await working.update_state(acme_scope, "user:2", "s1", {"who": "acme user:2"}, merge=False, ttl_seconds=TTL)
    await working.update_state(globex_scope, "user:1", "s1", {"who": "globex"}, merge=False, ttl_seconds=TTL)
    # "user" + "1:s1" must not be able to spell the key of "user:1" + "s1".
    await working.update_state(acme_scope, "user", "1:s1", {"who": "acme user"}, merge=False, ttl_seconds=TTL)

    found = {
        (label, ns, sid): None if (s := await working.get(sc, ns, sid)) is None else s.state["who"]
        for label, sc, ns, sid in [
            ("acme", acme_scope, "user:1", "s1"),
            ("acme", acme_scope, "user:2", "s1"),
            ("globex", globex_scope, "user:1", "s1"),
            ("acme", acme_scope, "user", "1:s1"),
            ("acme", acme_scope, "user:2", "s2"),
        ]
    }

    assert found == {
        ("acme", "user:1", "s1"): "acme user:1",
        ("acme", "user:2", "s1"): "acme user:2",
        ("globex", "user:1", "s1"): "globex",
        ("acme", "user", "1:s1"): "acme user",
        ("acme", "user:2", "s2"): None,
    }


async def test_take_returns_the_whole_session_once_and_leaves_it_empty(
    working: WorkingMemoryStore, me: NamespaceScope
) -> None:
    await working.append_turn(me, "user:1", "s1", turn(0), window=10, ttl_seconds=TTL)
    await working.update_state(me, "user:1", "s1", {"goal": "plan the trip"}, merge=True, ttl_seconds=TTL)

    taken = await working.take(me, "user:1", "s1")

    assert taken is not None
    assert (taken.turns, taken.state) == ([turn(0)], {"goal": "plan the trip"})
    assert await working.get(me, "user:1", "s1") is None
    assert await working.take(me, "user:1", "s1") is None


async def test_take_of_an_expired_session_returns_none(
    working: WorkingMemoryStore, me: NamespaceScope, clock: ManualClock
) -> None:
    await working.append_turn(me, "user:1", "s1", turn(0), window=10, ttl_seconds=60)
    clock.advance(60)

    assert await working.take(me, "user:1", "s1") is None


async def test_take_needs_write_access(working: WorkingMemoryStore, acme: str) -> None:
    writer = scope(acme, write=["shared:team"])
    reader = scope(acme, read=["shared:team"])
    await working.append_turn(writer, "shared:team", "s1", turn(0), window=10, ttl_seconds=TTL)

    with pytest.raises(NamespaceForbidden):
        await working.take(reader, "shared:team", "s1")
    assert await working.get(reader, "shared:team", "s1") is not None


async def test_a_read_only_grant_can_read_a_session_but_not_write_it(working: WorkingMemoryStore, acme: str) -> None:
    writer = scope(acme, write=["shared:team"])
    reader = scope(acme, read=["shared:team"])
    await working.append_turn(writer, "shared:team", "s1", turn(0), window=10, ttl_seconds=TTL)

    stored = await working.get(reader, "shared:team", "s1")
    assert stored is not None
    assert stored.turns == [turn(0)]
    with pytest.raises(NamespaceForbidden):
        await working.append_turn(reader, "shared:team", "s1", turn(1), window=10, ttl_seconds=TTL)
    with pytest.raises(NamespaceForbidden):
        await working.update_state(reader, "shared:team", "s1", {"x": 1}, merge=True, ttl_seconds=TTL)
    stored = await working.get(reader, "shared:team", "s1")
    assert stored is not None
    assert (stored.turns, stored.state) == ([turn(0)], {})


async def test_a_namespace_outside_the_grant_can_be_neither_read_nor_written(
    working: WorkingMemoryStore, me: NamespaceScope
) -> None:
    with pytest.raises(NamespaceForbidden):
        await working.get(me, "user:2", "s1")
    with pytest.raises(NamespaceForbidden):
        await working.append_turn(me, "user:2", "s1", turn(0), window=10, ttl_seconds=TTL)
    with pytest.raises(NamespaceForbidden):
        await working.update_state(me, "user:2", "s1", {"x": 1}, merge=True, ttl_seconds=TTL)


async def test_concurrent_appends_keep_the_last_window_and_evict_every_other_turn_exactly_once(
    working: WorkingMemoryStore, me: NamespaceScope
) -> None:
    window, total = 10, 50
    evicted: list[Turn] = []

    async def append(n: int) -> None:
        session, gone = await working.append_turn(me, "user:1", "busy", turn(n), window=window, ttl_seconds=TTL)
        assert session.turns[-1] == turn(n)
        evicted.extend(gone)

    async with anyio.create_task_group() as tg:
        for n in range(total):
            tg.start_soon(append, n)

    final = await working.get(me, "user:1", "busy")
    assert final is not None
    assert len(final.turns) == window
    assert len(evicted) == total - window
    assert sorted([*evicted, *final.turns], key=lambda t: t.content) == sorted(
        [turn(n) for n in range(total)], key=lambda t: t.content
    )


async def test_concurrent_merges_of_distinct_keys_all_land(working: WorkingMemoryStore, me: NamespaceScope) -> None:
    async def merge(n: int) -> None:
        await working.update_state(me, "user:1", "busy", {f"k{n}": n, "nested": {f"n{n}": n}}, True, TTL)

    async with anyio.create_task_group() as tg:
        for n in range(30):
            tg.start_soon(merge, n)

    final = await working.get(me, "user:1", "busy")
    assert final is not None
    assert final.state == {**{f"k{n}": n for n in range(30)}, "nested": {f"n{n}": n for n in range(30)}}


async def remember(working: WorkingMemoryStore, who: NamespaceScope, namespace: str, session_id: str) -> None:
    """A session holding a turn and a state that names where it lives."""
    await working.append_turn(who, namespace, session_id, turn(0), window=10, ttl_seconds=TTL)
    await working.update_state(who, namespace, session_id, {"at": [namespace, session_id]}, True, TTL)


async def held(working: WorkingMemoryStore, who: NamespaceScope, namespace: str, session_id: str) -> bool:
    """Whether the session is there, whole."""
    session = await working.get(who, namespace, session_id)
    if session is None:
        return False
    assert (session.turns, session.state) == ([turn(0)], {"at": [namespace, session_id]})
    return True


# session ids that need quoting, and that hold glob metacharacters of Redis' MATCH
AWKWARD_IDS = ("s1", "s*", "s[1]?", "a:b/c d%\\x", "*")


async def test_purging_a_namespace_removes_its_sessions_and_no_other_namespaces_or_tenants(
    working: WorkingMemoryStore, acme: str, globex: str
) -> None:
    admin = scope(acme, admin=True)
    lookalike = scope(f"{acme}2", admin=True)  # a tenant whose name this one is a prefix of
    other = scope(globex, admin=True)
    for session_id in AWKWARD_IDS:
        await remember(working, admin, "user:1", session_id)
    survivors = [
        (admin, "user:10", "s1"),
        (admin, "user:1:2", "s1"),
        (admin, "user", "1:s1"),
        (admin, "user", "s*"),
        (admin, "shared:team", "s1"),
        (lookalike, "user:1", "s1"),
        (lookalike, "user:1", "s*"),
        (other, "user:1", "s1"),
    ]
    for who, namespace, session_id in survivors:
        await remember(working, who, namespace, session_id)

    removed = await working.purge(admin, "user:1")

    assert removed == len(AWKWARD_IDS)
    assert [await held(working, admin, "user:1", session_id) for session_id in AWKWARD_IDS] == [False] * len(
        AWKWARD_IDS
    )
    assert [await held(working, *survivor) for survivor in survivors] == [True] * len(survivors)


async def test_purging_a_namespace_leaves_the_namespaces_whose_names_extend_it(
    working: WorkingMemoryStore, acme: str
) -> None:
    admin = scope(acme, admin=True)
    for session_id in AWKWARD_IDS:
        await remember(working, admin, "user", session_id)
    survivors = [("user:1", "s1"), ("user:1", "2:s1"), ("user:1:2", "s*"), ("users", "s1")]
    for namespace, session_id in survivors:
        await remember(working, admin, namespace, session_id)

    assert await working.purge(admin, "user") == len(AWKWARD_IDS)

    assert [await held(working, admin, "user", session_id) for session_id in AWKWARD_IDS] == [False] * len(AWKWARD_IDS)
    assert [await held(working, admin, ns, sid) for ns, sid in survivors] == [True] * len(survivors)


async def test_purge_answers_how_many_live_sessions_it_removed_and_leaves_nothing_of_them(
    working: WorkingMemoryStore, acme: str, clock: ManualClock
) -> None:
    admin = scope(acme, admin=True)
    assert await working.purge(admin, "user:1") == 0
    await working.append_turn(admin, "user:1", "expired", turn(0), window=10, ttl_seconds=60)
    clock.advance(61)  # gone for every read already: removed, not counted
    sessions = [f"s{n}" for n in range(250)]  # more than one batch of deletes
    for session_id in sessions:
        await working.append_turn(admin, "user:1", session_id, turn(0), window=10, ttl_seconds=TTL)
    await working.update_state(admin, "user:1", "s0", {"goal": "plan the trip"}, merge=True, ttl_seconds=TTL)

    assert await working.purge(admin, "user:1") == len(sessions)

    assert await working.purge(admin, "user:1") == 0
    assert await working.get(admin, "user:1", "s0") is None
    # a session written after the purge starts empty: neither its turns nor its state were left behind
    session, evicted = await working.append_turn(admin, "user:1", "s0", turn(1), window=10, ttl_seconds=TTL)
    assert (session.turns, session.state, evicted) == ([turn(1)], {}, [])


async def test_a_non_admin_scope_cannot_purge_a_namespace(working: WorkingMemoryStore, acme: str) -> None:
    writer = scope(acme, read=["user:1"], write=["user:1"])
    await remember(working, writer, "user:1", "s1")

    with pytest.raises(NamespaceForbidden):
        await working.purge(writer, "user:1")

    assert await held(working, writer, "user:1", "s1")


async def test_a_session_lists_among_those_a_subject_wrote_once_it_appended_a_turn_or_updated_the_state(
    working: WorkingMemoryStore, acme: str
) -> None:
    admin = scope(acme, admin=True)
    writer = scope(acme, write=["user:1", "user:1:2"])
    assert await working.sessions_written_by(admin, "agent-1") == []
    await working.append_turn(writer, "user:1", "s*", turn(0), window=10, ttl_seconds=TTL, subject="agent-1")
    await working.update_state(writer, "user:1:2", "a:b/c d%\\x", {"k": 1}, True, TTL, subject="agent-1")
    await working.update_state(writer, "user:1", "replaced", {"k": 1}, merge=False, ttl_seconds=TTL, subject="agent-1")
    # written by nobody named, then by the subject: it joins the writers of a session that was already there
    await working.append_turn(writer, "user:1", "joined", turn(0), window=10, ttl_seconds=TTL)
    await working.update_state(writer, "user:1", "joined", {"k": 1}, True, TTL, subject="agent-1")

    listed = await working.sessions_written_by(admin, "agent-1")

    assert listed == sorted(
        [("user:1", "s*"), ("user:1:2", "a:b/c d%\\x"), ("user:1", "replaced"), ("user:1", "joined")]
    )
    joined = await working.get(writer, "user:1", "joined")
    assert joined is not None
    assert (joined.turns, joined.state) == ([turn(0)], {"k": 1})  # recording the writer changed nothing else


async def test_every_session_a_subject_wrote_is_listed_however_many_the_tenant_holds(
    working: WorkingMemoryStore, acme: str
) -> None:
    admin = scope(acme, admin=True)
    written = [("user:1", f"s{n:04d}") for n in range(620)]  # more than one batch of reads
    for namespace, session_id in written:
        await working.append_turn(admin, namespace, session_id, turn(0), window=10, ttl_seconds=TTL, subject="a-1")

    assert await working.sessions_written_by(admin, "a-1") == written


async def test_another_subjects_sessions_and_another_tenants_are_not_listed(
    working: WorkingMemoryStore, acme: str, globex: str
) -> None:
    admin = scope(acme, admin=True)
    lookalike = scope(f"{acme}2", admin=True)  # a tenant whose name this one is a prefix of
    other = scope(globex, admin=True)
    await working.append_turn(admin, "user:1", "mine", turn(0), window=10, ttl_seconds=TTL, subject="agent-1")
    await working.update_state(admin, "user:1", "shared", {"k": 1}, True, TTL, subject="agent-2")
    await working.append_turn(admin, "user:1", "shared", turn(0), window=10, ttl_seconds=TTL, subject="agent-1")
    for session_id in ("theirs", "s*"):
        await working.append_turn(admin, "user:1", session_id, turn(0), window=10, ttl_seconds=TTL, subject="agent-2")
        await working.update_state(admin, "user:2", session_id, {"k": 1}, True, TTL, subject="agent-10")
        await working.append_turn(admin, "user:3", session_id, turn(0), window=10, ttl_seconds=TTL)
        await working.append_turn(lookalike, "user:1", session_id, turn(0), 10, TTL, subject="agent-1")
        await working.update_state(other, "user:1", session_id, {"k": 1}, True, TTL, subject="agent-1")

    assert await working.sessions_written_by(admin, "agent-1") == [("user:1", "mine"), ("user:1", "shared")]
    assert await working.sessions_written_by(admin, "agent-2") == [
        ("user:1", "s*"),
        ("user:1", "shared"),
        ("user:1", "theirs"),
    ]
    assert await working.sessions_written_by(admin, "agent") == []
    assert await working.sessions_written_by(admin, "agent-*") == []
    assert await working.sessions_written_by(lookalike, "agent-1") == [("user:1", "s*"), ("user:1", "theirs")]


async def test_a_taken_or_purged_session_is_no_longer_listed(working: WorkingMemoryStore, acme: str) -> None:
    admin = scope(acme, admin=True)
    for namespace, session_id in [("user:1", "taken"), ("user:1", "kept"), ("user:2", "purged")]:
        await working.append_turn(admin, namespace, session_id, turn(0), window=10, ttl_seconds=TTL, subject="a-1")

    await working.take(admin, "user:1", "taken")
    await working.purge(admin, "user:2")

    assert await working.sessions_written_by(admin, "a-1") == [("user:1", "kept")]
    # written again by another subject, the sessions start afresh: the old writer is not among their writers
    await working.append_turn(admin, "user:1", "taken", turn(1), window=10, ttl_seconds=TTL, subject="a-2")
    await working.update_state(admin, "user:2", "purged", {"k": 1}, True, TTL, subject="a-2")
    assert await working.sessions_written_by(admin, "a-1") == [("user:1", "kept")]
    assert await working.sessions_written_by(admin, "a-2") == [("user:1", "taken"), ("user:2", "purged")]


async def test_an_expired_session_is_no_longer_listed_nor_its_writers_kept_when_it_starts_again(
    working: WorkingMemoryStore, acme: str, clock: ManualClock
) -> None:
    admin = scope(acme, admin=True)
    await working.append_turn(admin, "user:1", "short", turn(0), window=10, ttl_seconds=60, subject="a-1")
    await working.update_state(admin, "user:1", "stateful", {"k": 1}, True, 60, subject="a-1")
    await working.append_turn(admin, "user:1", "long", turn(0), window=10, ttl_seconds=TTL, subject="a-1")
    clock.advance(60)

    assert await working.sessions_written_by(admin, "a-1") == [("user:1", "long")]
    await working.append_turn(admin, "user:1", "short", turn(1), window=10, ttl_seconds=60, subject="a-2")
    await working.update_state(admin, "user:1", "stateful", {"k": 2}, True, 60, subject="a-2")
    assert await working.sessions_written_by(admin, "a-1") == [("user:1", "long")]


async def test_a_non_admin_scope_cannot_list_the_sessions_a_subject_wrote(
    working: WorkingMemoryStore, acme: str
) -> None:
    writer = scope(acme, read=["user:1"], write=["user:1"])
    await working.append_turn(writer, "user:1", "s1", turn(0), window=10, ttl_seconds=TTL, subject="a-1")

    with pytest.raises(NamespaceForbidden):
        await working.sessions_written_by(writer, "a-1")

    assert await working.sessions_written_by(scope(acme, admin=True), "a-1") == [("user:1", "s1")]


async def test_redis_down_is_backend_unavailable_and_the_same_client_recovers(
    own_redis: RedisServer, clock: ManualClock, acme: str
) -> None:
    me = scope(acme, write=["user:1"])
    working = RedisWorkingMemory(fast_failing_client(own_redis.url), clock)
    await working.append_turn(me, "user:1", "s1", turn(0), window=10, ttl_seconds=TTL)

    own_redis.stop()
    with pytest.raises(BackendUnavailable):
        await working.get(me, "user:1", "s1")
    with pytest.raises(BackendUnavailable):
        await working.append_turn(me, "user:1", "s1", turn(1), window=10, ttl_seconds=TTL)
    with pytest.raises(BackendUnavailable):
        await working.update_state(me, "user:1", "s1", {"x": 1}, merge=True, ttl_seconds=TTL)
    with pytest.raises(BackendUnavailable):
        await working.ping()

    own_redis.start()  # an empty server: scripts must be loaded again, data is gone
    await working.ping()
    session, _ = await working.append_turn(me, "user:1", "s1", turn(2), window=10, ttl_seconds=TTL)
    assert session.turns == [turn(2)]
    merged = await working.update_state(me, "user:1", "s1", {"x": 1}, merge=True, ttl_seconds=TTL)
    assert merged.state == {"x": 1}
    await working.close()
