//! The engine's layer order (ARCHITECTURE.md, "Codemap"): every `crate::…` path in `src/` must name a module of
//! the same or a lower layer than the file's own top-level module (the check: `support/layer_scan.rs`).

#[path = "support/layer_scan.rs"]
mod layer_scan;

use std::path::Path;

/// Top-level modules, lowest layer first; modules on one line are one layer and may import each other.
const LAYERS: &[&[&str]] = &[
    &["error", "special"],
    &["linalg", "sampling", "distribution", "quasi_newton"],
    &["space", "kernel", "kde", "objective", "polytope", "pareto"],
    &["gp"],
    &["acquisition"],
    &["optim"],
    &["data"],
    &["blocks"],
    &["problem"],
    &["policy"],
    &["study", "testfunctions"],
    &["lib"],
];

#[test]
fn no_module_imports_a_higher_layer() {
    layer_scan::assert_layers(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), LAYERS, 15);
}

#[test]
fn the_scanner_sees_grouped_and_inline_paths() {
    use layer_scan::imported_modules;
    assert_eq!(imported_modules("use crate::{gp::Gp, space, self};"), ["gp", "space"]);
    assert_eq!(imported_modules("    let x = crate::policy::build(a); // crate::study"), ["policy"]);
    assert_eq!(imported_modules("//! see crate::study"), Vec::<String>::new());
}
