-- SPDX-License-Identifier: MIT
-- gaps_through_seq: a purge of quarantined events deletes rows in the middle of an agent's seqs.
-- Every seq at or below this mark that has no row is gone for good, so a cursor read never takes
-- it for a commit not yet visible (store_inbox.c). A purge raises it in its own transaction.
ALTER TABLE agents ADD COLUMN gaps_through_seq INTEGER NOT NULL DEFAULT 0;
