"""`write_batch`: many writes in one call, with the outcomes of writing them one by one, in order.

A batch costs what must stay per memory and shares the rest. Shared: the checks, the text rules of every item in
one worker-thread hop, the importance of every item at once (the optional LLM rates them concurrently), one
`Embedder.embed_documents` call for every text of the batch and one hop for every keyword vector. Then the items
are committed in the batch's order, each run of consecutive items of one namespace under that namespace's write
lock (`memory.write.batch_commit`): the store reads for a window of items are shared (one hash lookup, one engine batch
of conflict searches), each item is decided as `MemoryWriter.commit_locked` decides it, against the store as it
would be after items 0..k-1 (a repeat within the batch is skipped, a later value supersedes an earlier one), and
the plain new memories of a window are stored in one upsert. Concurrent writers of the namespace interleave
between chunks of a run, never inside an item.

The vectors are computed before any item is stored, so a dialogue turn is embedded in the context of the turn
it is expected to follow: the batch's previous item of its session, else the session's latest stored turn. The
commit checks that under the lock and embeds the item again when another turn came between (an earlier item was
a repeat, updated another memory in place, or a concurrent write landed), as a single write does when a turn
lands while it is embedded.

What differs from single writes is when the repeat of a stored memory is found: a single write checks before
the text rules and again under the lock, a batch item only under the lock (the text rules of a repeat run for
nothing; its answer is the same). An item with too little information is skipped unless it repeats a stored
memory (then it is skipped as that repeat, as a single write would answer).

Each item ends as its `WriteOutcome` or the `MemoryEngineError` it raised (an invalid item does not stop the
others). A backend that fails (`BackendUnavailable`) ends the batch: that item and every later one answer it,
unattempted, and a retry of the batch completes it (`memory.write.linking`; the gateway replays the items done). A
failure before any item is stored (the embedder, the session lookup) is raised: nothing was written.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from memory import cpu_meter
from memory.errors import BackendUnavailable, InvalidArgument, MemoryEngineError
from memory.models import Memory, WriteOutcome
from memory.pipeline.analysis import WriteAnalysis
from memory.ports import SparseVector
from memory.requests import WriteRequest
from memory.scope import NamespaceScope
from memory.write.batch_commit import BatchResult, Failed, Item, commit_run
from memory.write.writer import Draft, MemoryWriter

__all__ = ["BatchResult", "write_batch"]
RATING_CONCURRENCY = 16  # items whose importance the optional LLM rates at once


async def write_batch(
    writer: MemoryWriter, scope: NamespaceScope, requests: Sequence[WriteRequest], max_items: int
) -> list[BatchResult]:
    """Write `requests` in order (see the module docstring); one result per request, in the same order."""
    if len(requests) > max_items:
        raise InvalidArgument(f"at most {max_items} memories per batch; got {len(requests)}")
    results: list[BatchResult | None] = [None] * len(requests)
    drafts: dict[int, Draft] = {}
    for index, request in enumerate(requests):
        try:
            drafts[index] = writer.new_draft(scope, request)
        except MemoryEngineError as exc:
            results[index] = exc
    skipped = await _analysed(writer, drafts)
    await _embed_all(writer, scope, [draft for index, draft in drafts.items() if index not in skipped])
    done: list[tuple[int, BatchResult]] = []
    try:
        for run in _runs([Item(index, draft, skipped.get(index)) for index, draft in drafts.items()]):
            await commit_run(writer, scope, run, done)
    except Failed as failed:
        done.append((failed.index, failed.error))
        message = f"not attempted: an earlier item failed ({failed.error.message})"
        done += [(later, BackendUnavailable(message)) for later in drafts if later > failed.index]
    for index, result in done:
        results[index] = result
    return [result for result in results if result is not None]


async def _analysed(writer: MemoryWriter, drafts: dict[int, Draft]) -> dict[int, WriteOutcome]:
    """The text rules of every draft in one worker-thread hop (each under its own CPU budget), then importance,
    concurrently; the skips of the items with too little information, by index (the other drafts are ready)."""
    jobs = [writer.analysis_job(draft) for draft in drafts.values()]
    analyses = await cpu_meter.run_sync(lambda: [job() for job in jobs])
    skipped: dict[int, WriteOutcome] = {}
    if writer.importance_rater is None:  # the rules alone: nothing to wait for, no task per item
        for (index, draft), analysis in zip(drafts.items(), analyses, strict=True):
            if isinstance(outcome := await writer.drafted(draft, analysis), WriteOutcome):
                skipped[index] = outcome
        return skipped
    limiter = anyio.CapacityLimiter(RATING_CONCURRENCY)

    async def finish(index: int, draft: Draft, analysis: WriteAnalysis) -> None:
        async with limiter:
            if isinstance(outcome := await writer.drafted(draft, analysis), WriteOutcome):
                skipped[index] = outcome

    async with anyio.create_task_group() as group:
        for (index, draft), analysis in zip(drafts.items(), analyses, strict=True):
            group.start_soon(finish, index, draft, analysis)
    return skipped


async def _embed_all(writer: MemoryWriter, scope: NamespaceScope, drafts: list[Draft]) -> None:
    """Every draft's vectors: one `embed_documents` call for all their texts, one hop for the keyword vectors."""
    if not drafts:
        return
    await _expect_previous(writer, scope, drafts)
    work = [writer.embedding_work(draft) for draft in drafts]
    texts = [text for item_texts, _ in work for text in item_texts]
    vectors = await writer.embedder.embed_documents(texts)
    keyword_jobs = [job for _, job in work]
    sparse: list[SparseVector] = await cpu_meter.run_sync(lambda: [job() for job in keyword_jobs])
    at = 0
    for draft, (item_texts, _), keywords in zip(drafts, work, sparse, strict=True):
        writer.take_vectors(draft, vectors[at : at + len(item_texts)], keywords)
        at += len(item_texts)


async def _expect_previous(writer: MemoryWriter, scope: NamespaceScope, drafts: list[Draft]) -> None:
    """The turn each draft of a session is expected to follow: the batch's previous draft of that session and
    namespace, else the session's latest stored turn (read once per session). `commit` checks it."""
    last: dict[tuple[str, str], Memory | None] = {}
    for draft in drafts:
        memory = draft.memory
        if memory.session_id is None:
            continue
        key = (memory.namespace, memory.session_id)
        if key not in last:
            last[key] = await writer.store.latest_in_session(scope, memory.namespace, memory.session_id)
        draft.previous = last[key]
        last[key] = memory


def _runs(items: list[Item]) -> list[list[Item]]:
    """The items in order, cut where the namespace changes: each run is committed under its namespace's lock."""
    runs: list[list[Item]] = []
    for item in items:
        if runs and runs[-1][0].draft.memory.namespace == item.draft.memory.namespace:
            runs[-1].append(item)
        else:
            runs.append([item])
    return runs
