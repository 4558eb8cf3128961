//! Docs that stay true: every repository path and every module path a tracked Markdown file cites must exist.
//!
//! - Repository paths: in inline code, fenced code blocks and link targets, every token that starts with
//!   `crates/`, `docs/`, `tools/`, `clients/`, `migrations/`, `openapi/`, `examples/` or `.ci/` (after an optional
//!   `./`) must name a file or directory under the repository root. A placeholder ends the path (`<`, `>`, `*`, `{`,
//!   `}`, `$`, `…`), and so does a segment in capitals (`docs/bench/PATH`): what comes before it must exist, so
//!   `docs/bench/robust/<files>` checks the folder. Paths of other commits are not checked: one right after a colon
//!   (`git show abc1234:docs/x.md`), and every path of a span that runs `git checkout`, `git show` or `git log`
//!   (`git checkout abc1234 -- docs/bench/old_folder`).
//! - Relative link targets (`[text](../x.md)`, images too) must exist relative to the Markdown file.
//! - Module paths: in code, `crate::a::b`, `engine::a::b` and `server::a::b` must resolve, segment by segment, to
//!   `src/a.rs` or `src/a/mod.rs` (then `src/a/b.rs` …) of the engine or server crate; the first segment that is not
//!   a module is an item, checked loosely: its name must occur in the last module's file. Later segments are ignored.
//!
//! The Markdown files are `git ls-files '*.md'` (every Markdown file outside `target/` and hidden folders but
//! `.ci/` when git is not available). The repository root is found from `CARGO_MANIFEST_DIR`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const PREFIXES: &[&str] = &["crates/", "docs/", "tools/", "clients/", "migrations/", "openapi/", "examples/", ".ci/"];

/// Characters that end a path token (besides whitespace).
const SEPARATORS: &[char] = &['`', '"', '\'', '(', ')', '[', ']', ',', ';', '=', '|', '&', '!', '?'];

/// Characters that stand for something else (a placeholder or a glob): the path is checked up to them.
const PLACEHOLDERS: &[char] = &['<', '>', '*', '{', '}', '$', '…'];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository root exists")
}

/// One citation: the Markdown file, its line (1-based) and the text cited.
#[derive(Debug, Clone, PartialEq)]
struct Cited {
    line: usize,
    text: String,
}

/// The tracked Markdown files, relative to the root.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let git = Command::new("git").arg("-C").arg(root).args(["ls-files", "-z", "--", "*.md"]).output();
    if let Ok(out) = git
        && out.status.success()
        && !out.stdout.is_empty()
    {
        return out
            .stdout
            .split(|&b| b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| PathBuf::from(String::from_utf8_lossy(s).into_owned()))
            .filter(|p| root.join(p).is_file())
            .collect();
    }
    let mut found = Vec::new();
    walk(root, root, &mut found);
    found.sort();
    found
}

fn walk(root: &Path, dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            let hidden = name.starts_with('.') && name != ".ci";
            if !hidden && name != "target" && name != "node_modules" && !path.join("pyvenv.cfg").exists() {
                walk(root, &path, found);
            }
        } else if name.ends_with(".md") {
            found.push(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

/// The code of a Markdown text: inline code spans (which may run over a line break, not over a blank line) and
/// the lines of fenced code blocks, each with the line it starts on.
fn code_spans(md: &str) -> Vec<Cited> {
    let mut spans = Vec::new();
    let mut fence: Option<String> = None;
    let mut open: Option<Cited> = None;
    for (i, line) in md.lines().enumerate() {
        let n = i + 1;
        let trimmed = line.trim_start();
        if let Some(marker) = &fence {
            if trimmed.starts_with(marker.as_str()) {
                fence = None;
            } else {
                spans.push(Cited { line: n, text: line.to_string() });
            }
            continue;
        }
        if open.is_none() && (trimmed.starts_with("```") || trimmed.starts_with("~~~")) {
            fence = Some(trimmed[..3].to_string());
            continue;
        }
        if line.trim().is_empty() {
            open = None;
            continue;
        }
        let mut rest = line;
        loop {
            match (&mut open, rest.find('`')) {
                (Some(span), Some(at)) => {
                    span.text.push_str(&rest[..at]);
                    spans.push(open.take().unwrap());
                    rest = &rest[at + 1..];
                }
                (Some(span), None) => {
                    span.text.push_str(rest);
                    span.text.push(' ');
                    break;
                }
                (None, Some(at)) => {
                    open = Some(Cited { line: n, text: String::new() });
                    rest = &rest[at + 1..];
                }
                (None, None) => break,
            }
        }
    }
    spans
}

/// The targets of Markdown links and images, `[text](target)`, each with its line.
fn link_targets(md: &str) -> Vec<Cited> {
    let mut targets = Vec::new();
    for (i, line) in md.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("").trim_matches(|c| c == '<' || c == '>');
            if !target.is_empty() {
                targets.push(Cited { line: i + 1, text: target.to_string() });
            }
            rest = &after[end..];
        }
    }
    targets
}

/// Is `target` a link outside the repository (a URL, a mail address) or within the page (an anchor)?
fn is_external(target: &str) -> bool {
    target.starts_with('#') || target.contains("://") || target.starts_with("mailto:")
}

/// Does this piece of code name paths of another commit (`git checkout REV -- PATH`, `git show REV:PATH`)?
fn about_history(code: &str) -> bool {
    ["git checkout ", "git show ", "git log "].iter().any(|c| code.contains(c))
}

/// Is this path segment a placeholder written in capitals (`PATH`, `NAME`, `DIR`)?
fn is_capital_placeholder(segment: &str) -> bool {
    segment.chars().any(|c| c.is_ascii_uppercase())
        && segment.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The repository paths in a piece of code: tokens that start with one of `PREFIXES`, cut at a placeholder, with
/// an anchor, a line number and trailing punctuation removed.
fn repo_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    if about_history(code) {
        return paths;
    }
    for token in code.split(|c: char| c.is_whitespace() || SEPARATORS.contains(&c)) {
        let token = token.strip_prefix("./").unwrap_or(token);
        if !PREFIXES.iter().any(|p| token.starts_with(p)) {
            continue;
        }
        let mut path = token;
        if let Some(at) = path.find(PLACEHOLDERS) {
            // Keep the folder the placeholder stands in: `docs/bench/robust/<files>` → `docs/bench/robust/`.
            path = &path[..=path[..at].rfind('/').unwrap_or(0)];
        }
        let path = path.split(['#', ':']).next().unwrap_or("");
        let path = path.trim_end_matches(['.', ',', ';', ':']);
        // A segment in capitals stands for a name: keep the folder before it.
        let mut kept = String::new();
        for segment in path.split_inclusive('/') {
            if is_capital_placeholder(segment.trim_end_matches('/')) {
                break;
            }
            kept.push_str(segment);
        }
        if !kept.is_empty() {
            paths.push(kept);
        }
    }
    paths
}

/// The module paths in a piece of code: `crate::…`, `engine::…` and `server::…`, as their segments.
fn module_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for token in code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')) {
        let mut segments = token.split("::");
        let Some(head) = segments.next() else { continue };
        if !matches!(head, "crate" | "engine" | "server") || !token.contains("::") {
            continue;
        }
        let rest: Vec<String> = segments.take_while(|s| !s.is_empty()).map(str::to_string).collect();
        if !rest.is_empty() {
            let mut path = vec![head.to_string()];
            path.extend(rest);
            paths.push(path);
        }
    }
    paths
}

/// Does `word` occur in `text` as a whole identifier?
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

/// Resolves `segments` (without the crate) below a crate's `src/`: modules to their files, then one item loosely.
fn resolves_in(src: &Path, segments: &[String]) -> bool {
    let mut dir = src.to_path_buf();
    let mut file = src.join("lib.rs");
    for segment in segments {
        let as_file = dir.join(format!("{segment}.rs"));
        let as_dir = dir.join(segment).join("mod.rs");
        if as_file.is_file() {
            file = as_file;
        } else if as_dir.is_file() {
            file = as_dir;
        } else {
            // An item of the last module (a type, a function, a constant): its name must occur in that file.
            return fs::read_to_string(&file).is_ok_and(|text| has_word(&text, segment));
        }
        dir = dir.join(segment);
    }
    true
}

fn module_resolves(root: &Path, path: &[String]) -> bool {
    let crates: &[&str] = match path[0].as_str() {
        "engine" => &["engine"],
        "server" => &["server"],
        _ => &["engine", "server"],
    };
    crates.iter().any(|c| resolves_in(&root.join("crates").join(c).join("src"), &path[1..]))
}

/// Every citation of `md` (the text of `file`, relative to `root`) that does not exist, as `file:line: what`.
fn missing(root: &Path, file: &Path, md: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let name = file.display();
    for span in code_spans(md) {
        for path in repo_paths(&span.text) {
            if !root.join(&path).exists() {
                problems.push(format!("{name}:{}: `{path}` is not in the repository", span.line));
            }
        }
        for path in module_paths(&span.text) {
            if !module_resolves(root, &path) {
                problems.push(format!("{name}:{}: `{}` names no module or item", span.line, path.join("::")));
            }
        }
    }
    let here = root.join(file).parent().map(Path::to_path_buf).unwrap_or_else(|| root.to_path_buf());
    for link in link_targets(md) {
        if is_external(&link.text) {
            continue;
        }
        let target = link.text.split('#').next().unwrap_or("");
        if target.is_empty() || target.starts_with('/') {
            continue;
        }
        if !here.join(target).exists() {
            problems.push(format!("{name}:{}: link target `{}` does not exist", link.line, link.text));
        }
    }
    problems
}

#[test]
fn every_path_and_module_cited_in_markdown_exists() {
    let root = repo_root();
    let files = markdown_files(&root);
    assert!(files.iter().any(|f| f == Path::new("README.md")), "no README.md among {files:?}");
    let mut problems = Vec::new();
    for file in &files {
        let md = fs::read_to_string(root.join(file)).expect("a Markdown file is UTF-8");
        problems.extend(missing(&root, file, &md));
    }
    assert!(problems.is_empty(), "{} stale citations in Markdown:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_scanner_finds_paths_in_code_and_links() {
    let md = "See `crates/engine/src/gp/mod.rs`, `python3 tools/bench/robust_finals.py F --only x` and\n\
              [the note](docs/bench/robust.md#protocol). `git show abc1234:docs/gone.json` is history;\n\
              `docs/bench/robust/<files>` a folder; a span `over\na line break crates/server/src/lib.rs`.\n\
              `git checkout abc1234 -- docs/bench/gone` `docs/bench/PATH`\n\
              \n```sh\ncargo run -p bench -- robust --out docs/bench/x.json\n```\n\
              `crate::{gp::Gp, space}` `engine::policy::registry::build` `crate::gp`\n";
    let spans = code_spans(md);
    let paths: Vec<String> = spans.iter().flat_map(|s| repo_paths(&s.text)).collect();
    assert_eq!(
        paths,
        [
            "crates/engine/src/gp/mod.rs",
            "tools/bench/robust_finals.py",
            "docs/bench/robust/",
            "crates/server/src/lib.rs",
            "docs/bench/",
            "docs/bench/x.json",
        ]
    );
    assert_eq!(spans.iter().find(|s| s.text.contains("lib.rs")).unwrap().line, 3);
    let links: Vec<String> = link_targets(md).into_iter().map(|l| l.text).collect();
    assert_eq!(links, ["docs/bench/robust.md#protocol"]);
    let modules: Vec<String> = spans.iter().flat_map(|s| module_paths(&s.text)).map(|p| p.join("::")).collect();
    assert_eq!(modules, ["engine::policy::registry::build", "crate::gp"]);
}

#[test]
fn a_renamed_path_or_module_is_reported() {
    let root = repo_root();
    let md = "`crates/engine/src/quasi_newton.rs` exists, `crates/engine/src/lbfgsb.rs` does not; \
              `engine::quasi_newton` exists, `engine::optim::lbfgsb` does not, `engine::gp::NoSuchItem` neither; \
              [here](ARCHITECTURE.md) and [gone](docs/no-such-note.md).\n";
    let problems = missing(&root, Path::new("README.md"), md);
    assert_eq!(problems.len(), 4, "{problems:#?}");
    assert!(problems[0].contains("crates/engine/src/lbfgsb.rs"));
    assert!(problems[1].contains("engine::optim::lbfgsb"));
    assert!(problems[2].contains("engine::gp::NoSuchItem"));
    assert!(problems[3].contains("docs/no-such-note.md"));
}
