-- gaps_through_seq, as in SQLite's 0009: every seq at or below it that has no row was purged, so
-- a cursor read never takes it for a commit not yet visible (store_inbox.c).
ALTER TABLE agents ADD COLUMN IF NOT EXISTS gaps_through_seq BIGINT NOT NULL DEFAULT 0;
