-- Schema 4: runs split across shard processes (bench/sweep --shards N). All
-- shards of one run share one runs row, found by its run name; each shard
-- has a row in shards; records say which shard measured them.
ALTER TABLE runs ADD COLUMN run_name    TEXT    NOT NULL DEFAULT '';  -- --run-name; '' for one-process runs
ALTER TABLE runs ADD COLUMN shards      INTEGER NOT NULL DEFAULT 0;   -- N; 0 for one-process runs
ALTER TABLE runs ADD COLUMN fingerprint TEXT    NOT NULL DEFAULT '{}'; -- what every shard must share (seed, workload), JSON
ALTER TABLE runs ADD COLUMN start_at_ns INTEGER;                      -- the common start, on the database server's clock
CREATE UNIQUE INDEX runs_run_name ON runs (run_name) WHERE run_name <> '';

ALTER TABLE records ADD COLUMN shard INTEGER;                         -- NULL outside sharded runs

CREATE TABLE shards (
    run_id               INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    shard                INTEGER NOT NULL,
    status               TEXT    NOT NULL,    -- registered | running | complete | interrupted | failed
    host                 TEXT    NOT NULL DEFAULT '',
    pid                  INTEGER NOT NULL DEFAULT 0,
    attempt              INTEGER NOT NULL DEFAULT 1,  -- 2 and up: a restarted index
    registered_ns        INTEGER NOT NULL,    -- database server's clock
    heartbeat_ns         INTEGER NOT NULL,    -- database server's clock
    started_ns           INTEGER,             -- when the shard's load began, on the shared timeline
    ended_ns             INTEGER,
    clock_offset_ns      INTEGER NOT NULL DEFAULT 0,  -- database clock − shard clock
    clock_uncertainty_ns INTEGER NOT NULL DEFAULT 0,  -- half the smallest round trip
    PRIMARY KEY (run_id, shard)
);
