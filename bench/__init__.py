"""Benchmarks of the hindsight gateway: `python -m bench` (full) or `python -m bench --quick`. See bench/run.py."""
