-- Schema 3: what a run scraped from the server's /metrics, one series per
-- run (step -1) or per sweep step.
CREATE TABLE server_metrics (
    run_id       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step         INTEGER NOT NULL DEFAULT -1,   -- sweep step index; -1 for the whole run
    series_json  TEXT    NOT NULL,              -- the series as the scrape package marshals it
    PRIMARY KEY (run_id, step)
) WITHOUT ROWID;
