-- Schema 5 for PostgreSQL (see migrations/0005_shard_steps.sql): a sharded
-- sweep (sweep --shards N) meets once per step, and every shard says when its
-- load actually began.
ALTER TABLE shards ADD COLUMN began_ns BIGINT;   -- when the process woke to start its load (measured), shared timeline; started_ns is its schedule's zero

CREATE TABLE shard_steps (          -- one row per step of a sharded sweep
    run_id      BIGINT  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step        INTEGER NOT NULL,   -- in the order measured, from 0
    load        TEXT    NOT NULL,   -- the load every shard must have chosen ("8 req/s")
    chosen_by   INTEGER NOT NULL,   -- the shard that met there first
    start_at_ns BIGINT,             -- the step's common start, on the database server's clock
    PRIMARY KEY (run_id, step)
);

CREATE TABLE shard_step_parts (     -- each shard's part of a step
    run_id     BIGINT  NOT NULL,
    step       INTEGER NOT NULL,
    shard      INTEGER NOT NULL,
    status     TEXT    NOT NULL,    -- met | running | complete | partial
    started_ns BIGINT,              -- its schedule's zero, shared timeline
    began_ns   BIGINT,              -- when it actually began, shared timeline
    ended_ns   BIGINT,
    PRIMARY KEY (run_id, step, shard),
    FOREIGN KEY (run_id, step) REFERENCES shard_steps (run_id, step) ON DELETE CASCADE
);
