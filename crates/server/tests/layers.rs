//! The server's layer order (ARCHITECTURE.md, "Codemap"): handlers (`api`) call the service, the service calls the
//! store and the domain, never upward. Every `crate::…` path in `src/` must name a module of the same or a lower
//! layer than the file's own top-level module (the check is the engine's: `crates/engine/tests/support/`).

#[path = "../../engine/tests/support/layer_scan.rs"]
mod layer_scan;

use std::path::Path;

/// Top-level modules, lowest layer first; modules on one line are one layer and may import each other. `state`
/// shares the service's layer: `AppState` is the handle every service call takes, and it holds the service's
/// observation queue and ask gates.
const LAYERS: &[&[&str]] = &[
    &["config", "domain"],
    &["resources"],
    &["store"],
    &["error"],
    &["metrics", "idempotency"],
    &["compute"],
    &["service", "state"],
    &["extract", "auth", "http_layers", "connections", "ui"],
    &["api"],
    &["lib", "main"],
];

#[test]
fn no_module_imports_a_higher_layer() {
    layer_scan::assert_layers(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), LAYERS, 12);
}
