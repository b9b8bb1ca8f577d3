"""Memory systems the time-grounded probe measures: a store of messages, what time each is
stored at, and a reader that answers from what the store recalls.

``store`` is the SQLite store (FTS5 retrieval) both built-in systems share; ``systems`` holds
the two that differ only in the time they store (``ingest_time_memory``: when it was
ingested; ``valid_time_memory``: when it was said); ``readers`` answers from a recall, through
a registry model or by the probe's rules; ``plugin`` opens any system named by an import path;
``runs`` runs a system through the probe's control and probe arms. This package never imports
Dagster, and the probe package never imports it.
"""
