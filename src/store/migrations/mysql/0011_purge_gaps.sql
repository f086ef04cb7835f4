-- SPDX-License-Identifier: MIT
-- gaps_through_seq, as in SQLite's 0009: every seq at or below it that has no row was purged, so
-- the inbox page's hole check (commits not yet visible, store_inbox.c) passes over it.
-- statement
ALTER TABLE agents ADD COLUMN IF NOT EXISTS gaps_through_seq BIGINT NOT NULL DEFAULT 0;
