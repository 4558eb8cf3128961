-- Example pairs (x, a) uploaded to indirect studies after creation (POST /v1/studies/{id}/pairs), one row per
-- upload; the same table as migrations/postgres/0002_pairs.sql.
CREATE TABLE pair_batches (
    id         BLOB PRIMARY KEY,
    study_id   BLOB NOT NULL REFERENCES studies (id),
    seq        INTEGER NOT NULL,
    n_pairs    INTEGER NOT NULL,
    pairs      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (study_id, seq)
);
