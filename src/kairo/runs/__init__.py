"""The results store: every run of every command, remembered in one SQLite database and
queried with ``kairo runs …``."""

from kairo.runs._config import RunFilters
from kairo.runs._store import (SCHEMA_VERSION, STATUSES, RunRecord, Store, StoreError,
                                default_store_path, flatten_metrics, open_store, parse_since,
                                parse_where, read_results, require_store)

__all__ = ["RunFilters", "Store", "RunRecord", "StoreError", "SCHEMA_VERSION", "STATUSES",
           "default_store_path", "open_store", "require_store", "flatten_metrics",
           "read_results", "parse_where", "parse_since"]
