-- Example pairs (x, a) uploaded to indirect studies after creation (POST /v1/studies/{id}/pairs), one row per
-- upload; pairs given at creation stay in the study spec. The engine sees both.
CREATE TABLE pair_batches (
    id         UUID PRIMARY KEY,
    study_id   UUID NOT NULL REFERENCES studies (id),
    seq        BIGINT NOT NULL,                         -- 1, 2, … within the study
    n_pairs    BIGINT NOT NULL,
    pairs      JSONB NOT NULL,                          -- [{"target": {…}, "query": {…}}, …]
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (study_id, seq)
);
