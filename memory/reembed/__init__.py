"""Re-embedding: moving every memory of every tenant to another embedding model while the engine serves.

- `copy`: `Reembedding`, the copy of every memory from the active index into a new one built for another embedder,
  the catch-up passes replaying what changed meanwhile, and the verification that both indexes agree.
- `indexes`: `Indexes`, where a deployment's vector indexes live (data directory or Qdrant collections), and the
  store-specific steps: open a new index beside the active one, make it the active one durably, list and drop the
  inactive ones.
- `migration`: `Migration`, one migration at a time (its state machine, progress and status, the pause and the
  switch of store, embedder and calibration), the `Models` it asks for the embedder to move to, and its error
  `ReembedFailed`.
"""
