"""Moving memories and agent sessions between deployments: the records an export writes and an import reads
(`records` for memories, `sessions` for sessions with their events)."""

from memory.transfer.records import MAX_IMPORT_RECORDS, RECORD_FIELDS, TIME_FIELDS, check_records, import_records

__all__ = ["MAX_IMPORT_RECORDS", "RECORD_FIELDS", "TIME_FIELDS", "check_records", "import_records"]
