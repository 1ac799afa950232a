"""Recall quality evaluation: LoCoMo conversations through the real write and recall paths, with metrics and
in-run baselines (plain BM25, dense-only)."""
