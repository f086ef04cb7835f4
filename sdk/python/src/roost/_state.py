# SPDX-License-Identifier: MIT
"""The agent's local state: ``STATE_DIR/agent.db`` (SQLite, WAL) and ``STATE_DIR/agent.lock``.

The same schema and meta keys as libroost's state file (doc/AGENT.md, "The state file"), so
``roost agent status --state-dir DIR`` reads a Python agent's directory too:

* ``leases(event_id, lease_token, claimed_ms)``: written after each claim, before any handler
  runs; deleted once roostd answered the ack or release.
* ``processed(event_id, at_ms)``: written when a handler succeeded, BEFORE the ack is sent, so
  a lost ack never runs the handler again; pruned to a count and an age.
* ``meta``: ``agent_id``, ``consumer``, ``pid``, ``conn``, ``cursor``, ``last_sync_ms``.

One process per state dir: ``agent.lock`` is ``flock``ed exclusively for the agent's life (a
SIGKILLed agent's lock goes with it).
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from typing import IO, List, Optional, Tuple

from ._errors import RoostError, StateLocked

__all__ = ["StateFile"]

PRUNE_EVERY = 256

_SCHEMA = """
PRAGMA journal_mode=WAL;
PRAGMA synchronous=NORMAL;
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS processed(event_id TEXT PRIMARY KEY, at_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS processed_at ON processed(at_ms);
CREATE TABLE IF NOT EXISTS leases(event_id TEXT PRIMARY KEY, lease_token TEXT NOT NULL,
 claimed_ms INTEGER NOT NULL);
"""


def now_ms() -> int:
    return int(time.time() * 1000)


class StateFile:
    """The open, locked state of one agent. Use from one thread only (the agent's loop)."""

    def __init__(self, state_dir: str, agent_id: str, *, processed_max: int = 100_000,
                 processed_max_age_s: int = 7 * 86400) -> None:
        self.dir = state_dir
        self.processed_max = processed_max
        self.processed_max_age_s = processed_max_age_s
        self._inserts = 0
        try:
            os.makedirs(state_dir, mode=0o700, exist_ok=True)
            self._lock_file: Optional[IO[bytes]] = open(os.path.join(state_dir, "agent.lock"), "ab")
        except OSError as e:
            raise RoostError(f"cannot create the state dir {state_dir}: {e}", code="io_error") from e
        try:
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            self._lock_file.close()
            self._lock_file = None
            raise StateLocked(
                f"the state dir {state_dir} is in use by another running agent "
                "(one process per state dir; give each process its own)",
                code="state_locked") from e
        try:
            self._db = sqlite3.connect(os.path.join(state_dir, "agent.db"), timeout=5.0,
                                       isolation_level=None, check_same_thread=False)
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as e:
            self.close()
            raise RoostError(f"cannot open the state file in {state_dir}: {e}",
                             code="io_error") from e
        known = self.meta("agent_id")
        if known and known != agent_id:
            self.close()
            raise RoostError(f"the state dir {state_dir} belongs to agent {known}, not {agent_id}",
                             code="io_error")
        self.set_meta("agent_id", agent_id)

    def close(self) -> None:
        db = getattr(self, "_db", None)
        if db is not None:
            db.close()
            self._db = None  # type: ignore[assignment]
        if self._lock_file is not None:
            self._lock_file.close()  # releases the flock
            self._lock_file = None

    # ---- meta ---------------------------------------------------------------------------

    def meta(self, key: str) -> Optional[str]:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else None

    def set_meta(self, key: str, value: object) -> None:
        self._db.execute("INSERT INTO meta(key,value) VALUES(?,?) ON CONFLICT(key) DO UPDATE "
                         "SET value=excluded.value", (key, str(value)))

    # ---- leases ------------------------------------------------------------------------------

    def add_leases(self, leases: List[Tuple[str, str]]) -> None:
        """Records leases just claimed, in one transaction, before any handler runs."""
        ms = now_ms()
        with self._tx():
            self._db.executemany("INSERT OR REPLACE INTO leases(event_id,lease_token,claimed_ms) "
                                 "VALUES(?,?,?)", [(e, t, ms) for e, t in leases])

    def remove_lease(self, event_id: str) -> None:
        self._db.execute("DELETE FROM leases WHERE event_id=?", (event_id,))

    def leases(self) -> List[Tuple[str, str]]:
        return [(str(r[0]), str(r[1])) for r in
                self._db.execute("SELECT event_id, lease_token FROM leases ORDER BY claimed_ms")]

    # ---- processed -------------------------------------------------------------------------

    def is_processed(self, event_id: str) -> bool:
        return self._db.execute("SELECT 1 FROM processed WHERE event_id=?",
                                (event_id,)).fetchone() is not None

    def add_processed(self, event_id: str) -> None:
        """Records a finished handler; the ack is queued only after this returned."""
        self._db.execute("INSERT OR REPLACE INTO processed(event_id,at_ms) VALUES(?,?)",
                         (event_id, now_ms()))
        self._inserts += 1
        if self._inserts % PRUNE_EVERY == 0:
            self.prune()

    def prune(self) -> None:
        """Bounds the processed set by age and by count."""
        with self._tx():
            self._db.execute("DELETE FROM processed WHERE at_ms < ?",
                             (now_ms() - self.processed_max_age_s * 1000,))
            self._db.execute(
                "DELETE FROM processed WHERE event_id IN (SELECT event_id FROM processed "
                "ORDER BY at_ms DESC, event_id DESC LIMIT -1 OFFSET ?)", (self.processed_max,))

    def count(self, table: str) -> int:
        assert table in ("processed", "leases")
        row = self._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
        return int(row[0])

    def _tx(self) -> "_Tx":
        return _Tx(self._db)


class _Tx:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")
