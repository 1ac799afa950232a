"""The write path (docs/DESIGN.md § "The write path"): from a checked request to stored memories and their links.

- `drafts`: a request checked and read by the text rules (steps 1-5), before anything is stored;
- `repeats`: what a write answers when its text is already stored (step 2);
- `storing`: under the namespace's lock, the conflict candidates, the decision and the store (steps 6-7);
- `linking`: shared copies, supersession, updates in place, and the repair of an interrupted write;
- `writer`: `MemoryWriter`, one write through all of them;
- `batch` and `batch_commit`: many writes in one call, with the outcomes of writing them one by one.
"""
