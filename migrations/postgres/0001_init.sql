-- bayesd schema (Postgres). Never edit once released: add a new migration instead.
-- Large JSON (study spec, policy state, metadata, the engine's suggestion) lives in jsonb; values that are queried
-- (state, seq, value, cost, timestamps) are real columns. Every write to a study happens in a transaction that
-- first locks the study row (SELECT ... FOR UPDATE), so several server processes can share the database.

CREATE TABLE studies (
    id                     UUID PRIMARY KEY,
    seq                    BIGSERIAL NOT NULL UNIQUE,   -- creation order: the list cursor
    name                   TEXT NOT NULL,
    status                 TEXT NOT NULL,               -- active | completed | archived
    spec                   JSONB NOT NULL,              -- the engine StudySpec, seed filled in
    budget                 JSONB,                       -- {max_observations?, max_cost?}
    suggestion_ttl_seconds BIGINT,                      -- open suggestions expire after this long
    policy_state           JSONB NOT NULL,              -- engine PolicyState, updated with the suggestions it made
    n_observations         BIGINT NOT NULL DEFAULT 0,
    n_suggestions          BIGINT NOT NULL DEFAULT 0,
    total_cost             DOUBLE PRECISION NOT NULL DEFAULT 0,
    created_at             TIMESTAMPTZ NOT NULL,
    updated_at             TIMESTAMPTZ NOT NULL
);

CREATE TABLE suggestions (
    id             UUID PRIMARY KEY,
    study_id       UUID NOT NULL REFERENCES studies (id),
    seq            BIGINT NOT NULL,                     -- 1, 2, … within the study: the list cursor
    state          TEXT NOT NULL,                       -- open | completed | abandoned
    client_id      TEXT,
    body           JSONB NOT NULL,                      -- the engine suggestion (assignments, control_set, …)
    created_at     TIMESTAMPTZ NOT NULL,
    expires_at     TIMESTAMPTZ,
    closed_at      TIMESTAMPTZ,
    abandon_reason TEXT,                                -- deleted | expired
    UNIQUE (study_id, seq)
);
CREATE INDEX suggestions_by_study_state ON suggestions (study_id, state);

CREATE TABLE observations (
    id            UUID PRIMARY KEY,
    study_id      UUID NOT NULL REFERENCES studies (id),
    seq           BIGINT NOT NULL,                      -- 1, 2, … within the study: the list cursor
    suggestion_id UUID UNIQUE REFERENCES suggestions (id), -- at most one observation per suggestion
    assignments   JSONB NOT NULL,
    value         DOUBLE PRECISION,
    value_stddev  DOUBLE PRECISION,
    cost          DOUBLE PRECISION,
    failed        BOOLEAN NOT NULL,
    metadata      JSONB,
    extra         JSONB NOT NULL,                       -- control_set, noise_level, query
    created_at    TIMESTAMPTZ NOT NULL,
    UNIQUE (study_id, seq)
);

-- The first response to a POST carrying an Idempotency-Key, replayed for retries with the same key.
CREATE TABLE idempotency_keys (
    scope        TEXT NOT NULL,                         -- method and path of the request
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,                         -- a retry with another body is refused
    status       INTEGER NOT NULL,
    body         JSONB NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (scope, key)
);
