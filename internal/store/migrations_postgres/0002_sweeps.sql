-- Schema 2 for PostgreSQL (see migrations/0002_sweeps.sql).
ALTER TABLE records ADD COLUMN step INTEGER;

CREATE TABLE sweep_steps (
    run_id     BIGINT           NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    idx        INTEGER          NOT NULL,
    load       DOUBLE PRECISION NOT NULL,
    step_json  TEXT             NOT NULL,
    PRIMARY KEY (run_id, idx)
);

CREATE TABLE sweeps (
    run_id         BIGINT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    axis           TEXT   NOT NULL DEFAULT '',
    knee_json      TEXT,
    slo_safe_json  TEXT
);
