"""The RESULTS.md "Profile" section: CPU of one recall over HTTP MCP by stage, each profile's CPU by thread group
and its sampled buckets and top frames (`bench.profiling.Profile`), and the micro-checks."""

from __future__ import annotations

from bench.config import Results
from bench.profiling import Profile, stage_table
from bench.report_tables import table


def profile_section(results: Results) -> list[str]:
    lines = [
        "## Profile",
        "",
        "At the largest size, one client calling the tool in a loop. Per profile: "
        "CPU per call of each thread group read from `/proc` (exact, includes the engine's native search threads), "
        "then py-spy samples of the Python threads (250 Hz, idle samples left out) bucketed by the innermost frame "
        "that matches a rule in `bench/profiling.py` (engine calls by the source line that calls the shard; "
        "'thread hand-off' = handing a store call to a worker thread and waking the event loop afterwards), in "
        "share and in ms per call for the main thread and the worker threads. Raw collapsed stacks are written to "
        "`bench/profiles/` (not committed).",
        "",
    ]
    lines += stages(results)
    for profile in results.profiles:
        lines += _profile(profile)
    lines += ["### Micro-checks", ""]
    lines += table(["measurement", "result"], [[k, v] for k, v in results.checks.items()], "lr")
    return lines


def stages(results: Results) -> list[str]:
    """CPU of one recall over HTTP MCP by stage, from the first profile (the server under MCP recall)."""
    recall = next((p for p in results.profiles if p.thread_cpu and "recall" in p.title), None)
    if recall is None or not recall.operations:
        return []
    rows = [[stage, f"{value:.2f}"] for stage, value in stage_table(recall) if value >= 0.005]
    rows.append(["total (all threads, `/proc`)", f"{sum(v for _, v in recall.thread_cpu):.2f}"])
    return [
        "### CPU by stage: one recall over HTTP MCP",
        "",
        f"From the profile '{recall.title}' below: the engine's native search threads from `/proc` (they serve "
        "every engine query of the recall), every other stage from py-spy's samples of the Python threads "
        "(main and workers; an engine query's row is the time its calling thread spends inside the engine "
        "call). Sampling makes the Python rows estimates: they sum to the sampled share of the `/proc` total.",
        "",
        *table(["stage", "CPU ms per recall"], rows, "lr"),
    ]


def _profile(p: Profile) -> list[str]:
    per_op = f"{p.seconds / p.operations * 1000:.2f} ms per call" if p.operations else ""
    lines = [
        f"### {p.title}",
        "",
        f"{p.tool}; {p.operations} calls in {p.seconds:.1f} s ({per_op}); {p.samples} busy samples "
        f"(+{p.idle_samples} idle, left out).",
    ]
    if p.note:
        lines += ["", f"Note: {p.note}."]
    lines.append("")
    if p.thread_cpu:
        lines += ["CPU per call by thread group (`/proc/<pid>/task/*/stat`, whole window, sampler excluded):", ""]
        rows = [[name, f"{value:.2f}"] for name, value in p.thread_cpu if value >= 0.005]
        rows.append(["total", f"{sum(v for _, v in p.thread_cpu):.2f}"])
        lines += table(["thread group", "CPU ms per call"], rows, "lr")
    if p.buckets:
        lines += ["Where the Python threads spend their busy samples:", ""]
        rows = [[name, f"{share:.1f} %", f"{main:.2f}", f"{workers:.2f}"] for name, share, main, workers in p.buckets]
        lines += table(["where", "share", "main thread ms/call", "worker threads ms/call"], rows, "lrrr")
    if p.top_self:
        lines += ["Top frames by own time:", ""]
        lines += table(["frame", "share"], [[f"`{n}`", f"{v:.1f} %"] for n, v in p.top_self], "lr")
    if p.top_project:
        lines += ["Project functions by inclusive time:", ""]
        lines += table(["function", "share"], [[f"`{n}`", f"{v:.1f} %"] for n, v in p.top_project], "lr")
    return lines
