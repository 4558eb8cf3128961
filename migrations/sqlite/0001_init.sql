-- bayesd schema (embedded SQLite), the same tables as migrations/postgres. Never edit once released.
-- UUIDs are 16-byte blobs, timestamps RFC 3339 text, JSON text. Study writes run in BEGIN IMMEDIATE transactions,
-- which serialise every writer of the file.

CREATE TABLE studies (
    seq                    INTEGER PRIMARY KEY AUTOINCREMENT, -- creation order: the list cursor
    id                     BLOB NOT NULL UNIQUE,
    name                   TEXT NOT NULL,
    status                 TEXT NOT NULL,               -- active | completed | archived
    spec                   TEXT NOT NULL,               -- the engine StudySpec, seed filled in
    budget                 TEXT,                        -- {max_observations?, max_cost?}
    suggestion_ttl_seconds INTEGER,
    policy_state           TEXT NOT NULL,
    n_observations         INTEGER NOT NULL DEFAULT 0,
    n_suggestions          INTEGER NOT NULL DEFAULT 0,
    total_cost             REAL NOT NULL DEFAULT 0,
    created_at             TEXT NOT NULL,
    updated_at             TEXT NOT NULL
);

CREATE TABLE suggestions (
    id             BLOB PRIMARY KEY,
    study_id       BLOB NOT NULL REFERENCES studies (id),
    seq            INTEGER NOT NULL,
    state          TEXT NOT NULL,                       -- open | completed | abandoned
    client_id      TEXT,
    body           TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    expires_at     TEXT,
    closed_at      TEXT,
    abandon_reason TEXT,
    UNIQUE (study_id, seq)
);
CREATE INDEX suggestions_by_study_state ON suggestions (study_id, state);

CREATE TABLE observations (
    id            BLOB PRIMARY KEY,
    study_id      BLOB NOT NULL REFERENCES studies (id),
    seq           INTEGER NOT NULL,
    suggestion_id BLOB UNIQUE REFERENCES suggestions (id),
    assignments   TEXT NOT NULL,
    value         REAL,
    value_stddev  REAL,
    cost          REAL,
    failed        INTEGER NOT NULL,
    metadata      TEXT,
    extra         TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    UNIQUE (study_id, seq)
);

CREATE TABLE idempotency_keys (
    scope        TEXT NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status       INTEGER NOT NULL,
    body         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (scope, key)
);
