//! The engine's layer order (ARCHITECTURE.md, "Layers"): every `crate::…` path in `src/` must name a module of
//! the same or a lower layer than the file's own top-level module. Reads the sources, so a new upward import fails
//! here whether it is a `use` line or an inline path.

use std::collections::BTreeMap;
use std::path::Path;

/// Top-level modules, lowest layer first; modules on one line are one layer and may import each other.
const LAYERS: &[&[&str]] = &[
    &["error", "special"],
    &["linalg", "sampling", "distribution", "quasi_newton"],
    &["space", "kernel", "kde", "objective"],
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

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Top-level module names after `crate::` in `line` (`crate::a::b`, `crate::{a, b::c}`), comments excluded.
fn imported_modules(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() && name != "self" {
                    out.push(name);
                }
            }
        } else {
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_module_imports_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        let own = rel.components().next().expect("a component").as_os_str().to_string_lossy().replace(".rs", "");
        let own_layer = layer_of(&own).unwrap_or_else(|| panic!("module `{own}` is not in LAYERS: add it"));
        *seen.entry(own.clone()).or_default() += 1;
        let text = std::fs::read_to_string(file).expect("readable source");
        for (n, line) in text.lines().enumerate() {
            for m in imported_modules(line) {
                let Some(layer) = layer_of(&m) else {
                    violations.push(format!("{}:{}: `crate::{m}` is not in LAYERS", rel.display(), n + 1));
                    continue;
                };
                if layer > own_layer {
                    violations.push(format!(
                        "{}:{}: `{own}` (layer {own_layer}) imports `{m}` (layer {layer})",
                        rel.display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(seen.len() > 15, "the scan found only {seen:?}");
    assert!(violations.is_empty(), "upward imports:\n{}", violations.join("\n"));
}

#[test]
fn the_scanner_sees_grouped_and_inline_paths() {
    assert_eq!(imported_modules("use crate::{gp::Gp, space, self};"), ["gp", "space"]);
    assert_eq!(imported_modules("    let x = crate::policy::build(a); // crate::study"), ["policy"]);
    assert_eq!(imported_modules("//! see crate::study"), Vec::<String>::new());
}
