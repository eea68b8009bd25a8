-- Schema 1: runs, their summaries and per-request records.
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    kind          TEXT    NOT NULL,               -- bench | sweep | sim | lab | import
    label         TEXT    NOT NULL DEFAULT '',
    target        TEXT    NOT NULL DEFAULT '',    -- base URL, "embedded", "simulator", or the imported file
    model         TEXT    NOT NULL DEFAULT '',
    config_json   TEXT    NOT NULL DEFAULT '{}',  -- the resolved configuration, as given by the caller
    knee_version  TEXT    NOT NULL DEFAULT '',
    started_ns    INTEGER NOT NULL,               -- Unix nanoseconds
    ended_ns      INTEGER,                        -- NULL while running
    status        TEXT    NOT NULL CHECK (status IN ('running', 'complete', 'interrupted', 'failed')),
    heartbeat_ns  INTEGER NOT NULL,               -- last flush by the writing process
    host          TEXT    NOT NULL DEFAULT '',
    pid           INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX runs_started ON runs (started_ns);

CREATE TABLE summaries (
    run_id        INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    summary_json  TEXT    NOT NULL
);

CREATE TABLE records (
    run_id        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,               -- order in which the run produced it
    record_json   TEXT    NOT NULL,               -- record.Request in its JSONL shape
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
