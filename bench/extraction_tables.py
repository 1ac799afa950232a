"""The per-language tables of the extraction-quality section (`bench.extraction_quality.render`): recall of the
evidence in each namespace against the raw turns (`recall_table`), by LoCoMo category (`category_table`), and the
questions that lost the most evidence to the extracted facts (`examples`)."""

from __future__ import annotations

from bench.extraction_figures import CONFIGS, LABELS, LanguageFigures
from bench.stats import paired_bootstrap_interval
from gateway.evaluation.locomo import CATEGORY_NAMES

METRICS = ("recall@5", "recall@10", "ndcg@10", "mrr")
EXAMPLES = 4  # lost questions shown per language


def share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "–"


def _clip(text: str, limit: int = 90) -> str:
    text = " ".join(text.split()).replace("|", "/")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _verdict(lang: LanguageFigures, config: str) -> str:
    delta = lang.means(config)["recall@10"] - lang.means("raw")["recall@10"]
    verdict = "meets the bar (not lower)" if delta >= 0 else f"**below the bar by {-delta:.3f}**"
    lower, higher = lang.changed(config)
    low, high = paired_bootstrap_interval([a.recall(config) - a.recall("raw") for a in lang.asked])
    return (
        f"{delta:+.3f} (95% paired bootstrap interval over the questions {low:+.3f} to {high:+.3f}), {verdict}; "
        f"lower for {lower} questions, higher for {higher}"
    )


def recall_table(lang: LanguageFigures) -> list[str]:
    lines = [
        f"### {lang.label}",
        "",
        "| figure | " + " | ".join(LABELS[c] for c in CONFIGS) + " |",
        "| --- |" + " ---: |" * len(CONFIGS),
    ]
    for metric in METRICS:
        lines.append(f"| {metric} | " + " | ".join(f"{lang.means(c)[metric]:.3f}" for c in CONFIGS) + " |")
    lines.append(
        "| facts among the top-10 hits | " + " | ".join(f"{lang.fact_hit_share(c):.0%}" for c in CONFIGS) + " |"
    )
    hidden = [str(lang.evidence_hidden[c]) if c != "facts" else "–" for c in CONFIGS]
    lines.append("| evidence turns whose raw memory is hidden at question time | " + " | ".join(hidden) + " |")
    causes = lang.lost_causes
    lines += [
        "",
        f"recall@10 against raw turns: raw + extracted {_verdict(lang, 'both')}; with the facts in a session of "
        f"their own {_verdict(lang, 'apart')}. In raw + extracted, {lang.turns_after_fact:,} of the "
        f"{lang.raw_memories:,} raw turns' memories were written right after a fact of their session, so the "
        "engine's turn context (the lift of the reply to a matching question, `memory.recall.ranking`, and for a "
        '"Speaker: text" turn the vectors mixed with the previous turn\'s, `memory.pipeline.turns`) joins them to '
        "that fact instead of the turn before. Of the evidence turns raw + "
        f"extracted lost from the top 10: {causes['context']} follow a fact (turn context lost), "
        f"{causes['outranked']} were outranked with their context intact, {causes['rewritten']} had their text "
        f"replaced by a fact merged into them, {causes['hidden']} were hidden (superseded or expired).",
    ]
    return lines


def category_table(lang: LanguageFigures) -> list[str]:
    rows = []
    for category, name in CATEGORY_NAMES.items():
        tallies = [lang.by_category[c].get(category) for c in CONFIGS]
        if tallies[0] is None:
            continue
        cells = [f"{t.means()['recall@10']:.3f}" if t else "–" for t in tallies]
        rows.append(f"| {name} | {tallies[0].n} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    head = "| category | questions | " + " | ".join(f"{LABELS[c]} recall@10" for c in CONFIGS) + " |"
    return ["", head, "| --- | ---: |" + " ---: |" * len(CONFIGS), *rows]


def examples(lang: LanguageFigures) -> list[str]:
    lost = sorted(
        (a for a in lang.asked if a.recall("both") < a.recall("raw")),
        key=lambda a: a.recall("both") - a.recall("raw"),
    )[:EXAMPLES]
    if not lost:
        return []
    lines = [
        "",
        f"Questions that lost evidence (the {len(lost)} largest losses): the evidence's rank among the dialogue ids "
        "(raw → raw + extracted), and the first hits of raw + extracted.",
        "",
        "| question | evidence | rank raw → with facts | first hits with facts |",
        "| --- | --- | --- | --- |",
    ]
    for a in lost:
        ranks = []
        for e in a.evidence:
            before = a.ranked["raw"].index(e) + 1 if e in a.ranked["raw"] else None
            after = a.ranked["both"].index(e) + 1 if e in a.ranked["both"] else None
            ranks.append(f"{before or '–'} → {after or '–'}")
        top = "; ".join(f"[{kind}] {_clip(text, 60)}" for kind, text in a.both_top[:3])
        lines.append(
            f"| {_clip(a.question, 70)} ({a.conversation}) | {', '.join(a.evidence)} | {', '.join(ranks)} | {top} |"
        )
    return lines
