"""Per-kernel registry entries, how the server finds the clusters of running kernels: each entry,
its TLS folder and its note of a stop, written owner-only and read with every field checked
(:mod:`.entries`); the kernel's id (:mod:`.kernel_id`).
"""

from __future__ import annotations

from .entries import (
    ENTRY_PREFIX,
    LOOSE_TLS_SECONDS,
    MAX_ENTRY_BYTES,
    OWNER,
    SCHEMA_VERSION,
    STOPPED_SUFFIX,
    Entry,
    entry_from_json,
    forget_stopped,
    is_private,
    note_stopped,
    path_for,
    prune,
    read_all,
    remove,
    remove_entry,
    remove_tls,
    runtime_dir,
    stopped_at,
    write,
    write_tls,
)
from .fields import InvalidEntry, check_fields

__all__ = [
    "ENTRY_PREFIX",
    "LOOSE_TLS_SECONDS",
    "MAX_ENTRY_BYTES",
    "OWNER",
    "SCHEMA_VERSION",
    "STOPPED_SUFFIX",
    "Entry",
    "InvalidEntry",
    "check_fields",
    "entry_from_json",
    "forget_stopped",
    "is_private",
    "note_stopped",
    "path_for",
    "prune",
    "read_all",
    "remove",
    "remove_entry",
    "remove_tls",
    "runtime_dir",
    "stopped_at",
    "write",
    "write_tls",
]
