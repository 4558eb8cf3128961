//! The layer check shared by `crates/engine/tests/layers.rs` and `crates/server/tests/layers.rs` (each includes
//! this file with `#[path]`): every `crate::…` path in a crate's `src/` must name a top-level module of the same or
//! a lower layer than the file's own. Reads the sources, so an upward import fails whether it is a `use` line or an
//! inline path.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Top-level module names after `crate::` in `line` (`crate::a::b`, `crate::{a, b::c}`), comments excluded.
pub fn imported_modules(line: &str) -> Vec<String> {
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

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Checks `src` against `layers` (top-level modules, lowest layer first; modules in one entry are one layer and
/// may import each other): panics listing every upward import and every module missing from `layers`, and when
/// the scan saw at most `min_modules` modules (a scan that read nothing passes nothing).
pub fn assert_layers(src: &Path, layers: &[&[&str]], min_modules: usize) {
    let layer_of = |module: &str| layers.iter().position(|l| l.contains(&module));
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut violations = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(src).expect("under src");
        let own = rel.components().next().expect("a component").as_os_str().to_string_lossy().replace(".rs", "");
        let own_layer = layer_of(&own).unwrap_or_else(|| panic!("module `{own}` is not in the layer list: add it"));
        *seen.entry(own.clone()).or_default() += 1;
        let text = std::fs::read_to_string(file).expect("readable source");
        for (n, line) in text.lines().enumerate() {
            for m in imported_modules(line) {
                let Some(layer) = layer_of(&m) else {
                    violations.push(format!("{}:{}: `crate::{m}` is not in the layer list", rel.display(), n + 1));
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
    assert!(seen.len() > min_modules, "the scan found only {seen:?}");
    assert!(violations.is_empty(), "upward imports:\n{}", violations.join("\n"));
}
