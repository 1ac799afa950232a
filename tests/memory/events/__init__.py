"""Tests of the event and session-record store (memory/events)."""
