-- Schema 2: sweeps keep their steps, the knee and the SLO-safe point; records
-- say which sweep step produced them.
ALTER TABLE records ADD COLUMN step INTEGER;   -- NULL outside sweeps

CREATE TABLE sweep_steps (
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    idx        INTEGER NOT NULL,
    load       REAL    NOT NULL,                  -- concurrency or rate (req/s), as the sweep's axis says
    step_json  TEXT    NOT NULL,                  -- the step as the sweep package marshals it
    PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;

CREATE TABLE sweeps (
    run_id         INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    axis           TEXT    NOT NULL DEFAULT '',   -- concurrency | rate
    knee_json      TEXT,                          -- {"load":..., "reason":...} or NULL
    slo_safe_json  TEXT
);
