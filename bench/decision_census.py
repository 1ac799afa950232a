"""`python -m bench.decision_census [--corpus NAME ...] [--out FILE]`: every memory the write pipeline hides on
whole corpora, as cases of the labelled set waiting for their label.

Precision is measured on what the pipeline *does*: a census of its hides on real text nobody tuned the rules on
is the fairest sample of them. Each corpus is written turn by turn through `MemoryService.write` (default
pipeline, embedded engine, WordLlama; a `ManualClock` one second after each turn's time, as a live gateway sees
it), and every write that hid something (skipped as chit-chat, merged into an older memory, superseded older
memories, or was given an expiry) comes out as one JSON line in the form of `bench/decisions/*.jsonl`: the
statement's reference, the memories it superseded or merged with as `earlier`, the pipeline's decision and
reason in `got` / `reason`, and `expected` left empty for a person to fill in (`keep`, `expire` with `day`,
`supersede` / `merge` with `target`, `skip`). Labelled lines go into the set; `bench.decisions` then scores them
with the rest.

Corpora: `locomo-header` (LoCoMo dev, "[time] Speaker: text" + occurred_at, a namespace per conversation),
`locomo-observations`, `locomo-events` and `locomo-summaries` (the dataset's own third-person notes of each
session: facts extracted per speaker, "Caroline is planning to ...", events, and the session's summary; dated by
their session, a namespace per conversation),
`memorybank-cn` / `memorybank-en` (each user's queries, and the companion's responses, interleaved in the
user's namespace, text alone + occurred_at; the responses written by the subject "companion").
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio

from bench.decision_set import DATASETS, WRITER, header_time, memorybank, memorybank_time, parse_locomo_time, read_json
from bench.decision_set import locomo_facts as locomo_facts_of
from bench.decisions import read_decision
from bench.scopes import agent_scope
from memory.clock import ManualClock
from memory.embedders import WordLlamaEmbedder
from memory.models import WriteStatus
from memory.requests import WriteRequest
from memory.service import MemoryService
from memory.stores.edge import EdgeVectorStore

ARRIVAL = timedelta(seconds=1)
COMPANION = "companion"  # the subject that writes MemoryBank's responses
LOCOMO_NOTES = {"locomo-observations": "observation", "locomo-events": "event", "locomo-summaries": "summary"}
CORPORA = ("locomo-header", "memorybank-cn", "memorybank-en", *LOCOMO_NOTES)


@dataclass(frozen=True, slots=True)
class Said:
    """One turn of a corpus: its reference in the set's form, what is written, by whom, when and where."""

    ref: dict[str, Any]
    lang: str
    fmt: str
    content: str
    subject: str
    at: datetime
    namespace: str


def locomo_header(root: Path = DATASETS) -> Iterator[Said]:
    for conversation in read_json("locomo/locomo10-dev.json", root):
        sample = conversation["sample_id"]
        sessions = conversation["conversation"]
        keys = [k for k, v in sessions.items() if k.startswith("session_") and isinstance(v, list)]
        for key in sorted(keys, key=lambda k: int(k.removeprefix("session_"))):
            at = parse_locomo_time(sessions[f"{key}_date_time"])
            for turn in sessions[key]:
                ref = {"dataset": "locomo", "sample_id": sample, "dia_id": turn["dia_id"]}
                content = f"[{header_time(at)}] {turn['speaker']}: {turn['text']}"
                yield Said(ref, "en", "header", content, WRITER, at, f"locomo:{sample}")


def locomo_facts(field: str, root: Path = DATASETS) -> Iterator[Said]:
    """LoCoMo's own notes of one kind ("observation", "event", "summary"), session by session."""
    by_session: dict[tuple[str, int], list[Said]] = {}
    for (sample, kind, session, speaker, index), (text, at) in locomo_facts_of(root).items():
        if kind == field and text.strip():
            ref = {"dataset": "locomo", "sample_id": sample, "field": kind, "session": session}
            ref |= {"speaker": speaker, "index": index} if speaker else {}
            said = Said(ref, "en", "occurred_at", text, WRITER, at, f"locomo-{kind}:{sample}")
            by_session.setdefault((sample, session), []).append(said)
    for key in sorted(by_session):
        yield from by_session[key]


def memorybank_dialogue(dataset: str, root: Path = DATASETS) -> Iterator[Said]:
    lang = "zh" if dataset.endswith("_cn") else "en"
    for number, (name, user) in enumerate(memorybank(dataset, root).items()):
        for day in sorted(user["history"]):
            for index, turn in enumerate(user["history"][day]):
                at = memorybank_time(day, index)
                for part, subject in (("query", WRITER), ("response", COMPANION)):
                    ref = {"dataset": dataset, "user": name, "date": day, "index": index, "field": part}
                    yield Said(ref, lang, "occurred_at", turn[part], subject, at, f"{dataset}:{number}")


def corpus(name: str, root: Path = DATASETS) -> list[Said]:
    if name == "locomo-header":
        return list(locomo_header(root))
    if name in LOCOMO_NOTES:
        return list(locomo_facts(LOCOMO_NOTES[name], root))
    return list(memorybank_dialogue(name.replace("-", "_"), root))


def memory_of(said: Said) -> dict[str, Any]:
    """The reference of `said` as a memory of a case: its turn, and its writer when not the default."""
    return {"ref": said.ref} | ({"subject": said.subject} if said.subject != WRITER else {})


async def census(turns: Sequence[Said], service: MemoryService, clock: ManualClock) -> list[dict[str, Any]]:
    """Every write of `turns` that hid something, as an unlabelled case."""
    namespaces = sorted({t.namespace for t in turns})
    scopes = {s: agent_scope("census", s, namespaces) for s in {t.subject for t in turns}}
    written: dict[str, Said] = {}  # memory id -> the turn that created it
    found: list[dict[str, Any]] = []
    for said in turns:
        clock.set(said.at + ARRIVAL)
        request = WriteRequest(
            content=said.content, subject=said.subject, namespace=said.namespace, occurred_at=said.at
        )
        outcome = await service.write(scopes[said.subject], request)
        concerned = [*outcome.superseded]
        if outcome.status is WriteStatus.UPDATED or (outcome.status is WriteStatus.SKIPPED and outcome.stored):
            concerned.append(outcome.memory.id)  # merged into it, or an exact repeat of it
        known = [i for i in concerned if i in written]
        got = read_decision(outcome, known)
        if outcome.status is WriteStatus.CREATED:
            written[outcome.memory.id] = said
        if got.kinds:
            case_id = "census-" + "-".join(str(v) for v in said.ref.values())
            found.append(
                {"id": case_id, "lang": said.lang, "format": said.fmt}
                | {"earlier": [memory_of(written[i]) for i in known], "statement": memory_of(said)}
                | {"expected": "", "got": got.label, "reason": got.reason, "text": said.content}
            )
    return found


async def run(names: Sequence[str]) -> list[dict[str, Any]]:
    embedder = WordLlamaEmbedder()
    clock = ManualClock()
    found: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hindsight-census-") as tmp:
        store = EdgeVectorStore.open(Path(tmp) / "vectors", model_id=embedder.model_id, dimension=embedder.dimension)
        try:
            service = MemoryService(store, embedder, clock)
            for name in names:
                found += await census(corpus(name), service, clock)
        finally:
            await store.close()
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.decision_census", description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=CORPORA, help="a corpus (default: all)")
    parser.add_argument("--out", type=Path, help="write the JSON lines here instead of stdout")
    args = parser.parse_args(argv)
    import logging

    import wordllama  # noqa: F401  (it configures logging on import; quiet it before the run)

    logging.getLogger().setLevel(logging.WARNING)
    found = anyio.run(run, args.corpus or CORPORA)
    lines = "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in found)
    if args.out is None:
        sys.stdout.write(lines)
    else:
        args.out.write_text(lines, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
