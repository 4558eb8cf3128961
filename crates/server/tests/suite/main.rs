//! Server integration tests in one binary: each module was its own test binary, and each of the eighteen took
//! 11–40 s of a release build to compile and link against the server again (`cargo test --no-run --timings`).
//! Helpers are in [`common`]; `tests/layers.rs` stays a binary of its own, since it does not link the server.
//!
//! - [`http`], [`routes`]: the API's routes on both backends; [`openapi`]: the generated document equals the
//!   committed one; [`metrics`], [`operations`], [`dashboard`]: `/metrics`, tokens and settings, the dashboard;
//! - [`store_conformance`], [`group_commit`], [`lock_free`], [`processes`], [`csv_import`]: storage, concurrency,
//!   crashes and imports;
//! - [`seed000`] … [`seed004`]: the five papers' studies over HTTP;
//! - [`quickstart`], [`readme`]: the example script and the README's curl walkthrough against a real server.
//!
//! One module: `cargo test --release -p server --test suite http::`.

mod common;
mod csv_import;
mod dashboard;
mod group_commit;
mod http;
mod lock_free;
mod metrics;
mod openapi;
mod operations;
mod outcomes;
mod processes;
mod quickstart;
mod readme;
mod routes;
mod seed000;
mod seed001;
mod seed002;
mod seed003;
mod seed004;
mod store_conformance;
