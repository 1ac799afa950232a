"""The write pipeline of docs/DESIGN.md § "The write path", one small pure step per module, run in this order by
`MemoryService.write`:

1. `density`: skip pure chit-chat and acknowledgements (exact repeats are skipped by content hash before it);
2. `expiry`: time-bound facts get `expires_at` from the text;
3. `importance`: rule-based importance when the caller gives none, or an optional LLM within a deadline with the
   rules as its fallback (`rating`);
4. `conflict` (with `claims` and `reading`): near-duplicates update in place, contradicting statements supersede
   older ones;
5. store: dense (a dialogue turn in the context of the turn before it: `turns`) + sparse
   (`memory.embedders.sparse`) vectors, upsert, provenance.

What each step decided is recorded on the memory under `metadata["_pipeline"]` and, for skips, updates and
supersessions, in the `WriteOutcome`'s `reason`.
"""

from memory.pipeline.settings import PipelineSettings, for_embedder

PIPELINE_KEY = "_pipeline"

__all__ = ["PIPELINE_KEY", "PipelineSettings", "for_embedder"]
