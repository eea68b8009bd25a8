-- Schema 3 for PostgreSQL (see migrations/0003_server_metrics.sql).
CREATE TABLE server_metrics (
    run_id       BIGINT  NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step         INTEGER NOT NULL DEFAULT -1,
    series_json  TEXT    NOT NULL,
    PRIMARY KEY (run_id, step)
);
