-- SPDX-License-Identifier: MIT
-- One row per write transaction of roostd, inserted in the same round trip as its COMMIT, so a
-- writer whose connection dropped during COMMIT can learn afterwards whether it committed (see
-- doc/MYSQL.md, "A commit whose answer was lost"). marker: 6 bytes of Unix milliseconds (big
-- endian) then 10 random bytes, so rows arrive in key order and the prune of old ones is a range
-- at the start of the key. fenced = 1 marks a row the resolver inserted itself to make sure the
-- lost transaction can no longer commit.
-- statement
CREATE TABLE IF NOT EXISTS roost_commit_markers (
    marker BINARY(16) NOT NULL PRIMARY KEY,
    fenced TINYINT NOT NULL DEFAULT 0
) ENGINE = InnoDB
