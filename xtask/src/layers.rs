//! `cargo xtask layers`: every crate's modules run one way, and the crates
//! draw the device boundary.
//!
//! In each crate of [`CRATES`], every `crate::…` / `super::…` / `self::…`
//! path outside tests is resolved to the deepest module (file) it names.
//! Two rules:
//!
//! - **Order.** A top-level module may name only modules listed before it in
//!   the crate's layer list (or itself); the lists are the order
//!   ARCHITECTURE.md documents.
//! - **No loops.** The files of a crate, at any depth, never import each
//!   other in a loop of any length (strongly connected components of the
//!   file graph; a module declaring or re-exporting its own children is not
//!   an edge, a child naming its parent is).
//!
//! And the boundary: the crates' manifests name only the ipuc crates
//! [`ALLOWED_DEPENDENCIES`] allows, so the simulator depends on
//! `ipuc-target` alone and Cargo, not a convention, keeps the compiler out.
//!
//! The scan is lexical (comments, strings and char literals are skipped), so
//! it sees `use` items, grouped `use crate::{a, b::c}` and inline paths alike.
//! Test files (`tests/` folders, `tests.rs`, `*_tests.rs`) and `#[cfg(test)]`
//! items are left out: tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's source folder and its top-level modules, lowest layer first.
pub struct Crate {
    pub name: &'static str,
    pub src: &'static str,
    pub layers: &'static [&'static str],
}

/// Every checked crate with its layers, lowest first. Modules on one line
/// are peers in ARCHITECTURE.md but are still ordered here so the graph
/// stays acyclic.
pub const CRATES: &[Crate] = &[
    Crate {
        name: "ipuc-target",
        src: "target-ipu21/src",
        layers: &["lookup", "numeric", "ipu21", "kernel", "package"],
    },
    Crate {
        name: "ipuc-core",
        src: "core/src",
        layers: &[
            "asm",
            "runtime",
            "description",
            "ir",
            "plan",
            "lower",
            "place",
            "exchange",
            "patch",
            "rows",
            "emit",
            "pipeline",
        ],
    },
    Crate {
        name: "ipuc-sim",
        src: "sim/src",
        layers: &[
            "op",
            "cycle",
            "context",
            "profile",
            "memory",
            "codelet",
            "kernel_timing",
            "phase_memory",
            "witness",
            "fabric",
            "fault",
            "watch",
            "tile",
            "csr",
            "row_call",
            "bsp",
            "execute",
            "gemm",
            "codelets",
        ],
    },
    Crate {
        name: "ipuc",
        src: "host/src",
        layers: &[
            "fsio",
            "output",
            "progress",
            "model",
            "weights",
            "input",
            "reference",
            "phase_image",
            "device",
            "report",
            "compile",
            "exit",
            "cli",
            "api",
            "main",
        ],
    },
    Crate {
        name: "xtask",
        src: "xtask/src",
        layers: &[
            "atomic",
            "layers",
            "sizes",
            "process",
            "hostile",
            "browser",
            "bench_compile",
            "bench_sim",
            "sweep",
            "bench_models",
            "bench_throughput",
            "bench_speed",
            "python",
            "main",
        ],
    },
];

/// The ipuc crates each crate's manifest may depend on (any section).
pub const ALLOWED_DEPENDENCIES: &[(&str, &str, &[&str])] = &[
    ("ipuc-target", "target-ipu21/Cargo.toml", &[]),
    ("ipuc-device-asm", "device-asm/Cargo.toml", &[]),
    (
        "ipuc-core",
        "core/Cargo.toml",
        &["ipuc-target", "ipuc-device-asm"],
    ),
    ("ipuc-sim", "sim/Cargo.toml", &["ipuc-target"]),
];

/// Folders that must not name some paths at all, and why: the
/// device-numerics reference is a second implementation of
/// `docs/facts/device-numerics.md`, so it may not borrow the simulator's
/// arithmetic (`ipuc_sim`) or the planner's splits (`ipuc_core::plan`,
/// `ipuc_core::lower`).
pub const INDEPENDENT: &[(&str, &[&str], &str)] = &[(
    "host/src/reference",
    &["ipuc_sim", "ipuc_core::plan", "ipuc_core::lower"],
    "the reference shares no code with the simulator or the planner it checks",
)];

/// One upward import, import loop or forbidden dependency.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    pub file: String,
    pub line: usize,
    pub from: String,
    pub to: String,
    pub why: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: `{}` names `{}` ({})",
            self.file, self.line, self.from, self.to, self.why
        )
    }
}

/// Checks every crate of [`CRATES`] under the workspace `root`, and the
/// manifests of [`ALLOWED_DEPENDENCIES`].
pub fn check_workspace(root: &Path) -> Result<Vec<Violation>, String> {
    let mut out = Vec::new();
    for c in CRATES {
        out.extend(check(&root.join(c.src), c.src, c.layers)?);
    }
    for (folder, forbidden, why) in INDEPENDENT {
        out.extend(independence(&root.join(folder), folder, forbidden, why)?);
    }
    for (name, manifest, allowed) in ALLOWED_DEPENDENCIES {
        let text =
            std::fs::read_to_string(root.join(manifest)).map_err(|e| format!("{manifest}: {e}"))?;
        for (line, dep) in ipuc_dependencies(&text) {
            if !allowed.contains(&dep.as_str()) {
                out.push(Violation {
                    file: manifest.to_string(),
                    line,
                    from: name.to_string(),
                    to: dep,
                    why: format!("{name} may depend only on {allowed:?} of the ipuc crates"),
                });
            }
        }
    }
    Ok(out)
}

/// Every non-test path under `dir` that starts with one of `forbidden`
/// (`a::b` prefixes, whole segments).
fn independence(
    dir: &Path,
    shown: &str,
    forbidden: &[&str],
    why: &str,
) -> Result<Vec<Violation>, String> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let rel = file.strip_prefix(dir).unwrap_or(&file);
        if is_test_file(rel) {
            continue;
        }
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let tokens = without_test_items(tokens(&text));
        for (i, (line, t)) in tokens.iter().enumerate() {
            if !is_ident(t) || (i > 0 && tokens[i - 1].1 == "::") {
                continue;
            }
            // The path starting here, as far as `::` joins identifiers.
            let mut path = t.clone();
            let mut j = i + 1;
            while tokens.get(j).is_some_and(|(_, s)| s == "::")
                && tokens.get(j + 1).is_some_and(|(_, s)| is_ident(s))
            {
                path = format!("{path}::{}", tokens[j + 1].1);
                j += 2;
            }
            let hit = forbidden
                .iter()
                .find(|f| path == **f || path.starts_with(&format!("{f}::")));
            if let Some(f) = hit {
                out.push(Violation {
                    file: format!("{shown}/{}", rel.display()),
                    line: *line,
                    from: shown.to_string(),
                    to: (*f).to_string(),
                    why: why.to_string(),
                });
            }
        }
    }
    Ok(out)
}

/// The `ipuc…` crates a manifest names as dependencies, with their lines.
fn ipuc_dependencies(manifest: &str) -> Vec<(usize, String)> {
    let mut in_deps = false;
    let mut out = Vec::new();
    for (i, line) in manifest.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            in_deps = t.contains("dependencies");
            continue;
        }
        let name = t.split(['=', '.', ' ']).next().unwrap_or("");
        if in_deps && (name == "ipuc" || name.starts_with("ipuc-")) {
            out.push((i + 1, name.to_string()));
        }
    }
    out
}

/// Checks every non-test `.rs` file under `src` (shown as `shown/…`): the
/// top-level order `layers` and loops among files at any depth.
pub fn check(src: &Path, shown: &str, layers: &[&str]) -> Result<Vec<Violation>, String> {
    let mut files = Vec::new();
    collect(src, &mut files)?;
    files.sort();
    let rank: BTreeMap<&str, usize> = layers.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut modules: BTreeMap<Vec<String>, String> = BTreeMap::new();
    let mut texts = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(src).map_err(|e| e.to_string())?;
        if is_test_file(rel) {
            continue;
        }
        let module_path = module_path_of(rel);
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let name = format!("{shown}/{}", rel.display());
        modules.insert(module_path.clone(), name.clone());
        texts.push((module_path, name, text));
    }
    let mut out = Vec::new();
    // File graph: module path -> (module path it names, first line).
    let mut edges: BTreeMap<Vec<String>, BTreeMap<Vec<String>, usize>> = BTreeMap::new();
    for (here, name, text) in &texts {
        let top = here.first().cloned();
        if let Some(top) = &top {
            if !rank.contains_key(top.as_str()) {
                out.push(Violation {
                    file: name.clone(),
                    line: 1,
                    from: top.clone(),
                    to: top.clone(),
                    why: "module is not in xtask's layer list".into(),
                });
                continue;
            }
        }
        for (line, path) in paths(&without_test_items(tokens(text))) {
            let Some(resolved) = resolve(here, &path) else {
                continue;
            };
            // The deepest module the path names (an item's own module).
            let Some(target) = (1..=resolved.len())
                .rev()
                .map(|n| resolved[..n].to_vec())
                .find(|m| modules.contains_key(m))
            else {
                continue; // `crate::alloc`-style re-exports or macros
            };
            if target == *here || target.starts_with(here) {
                continue; // itself, or its own children (declared or re-exported)
            }
            if let (Some(from), Some(to)) = (&top, target.first()) {
                if from != to && rank[to.as_str()] > rank[from.as_str()] {
                    out.push(Violation {
                        file: name.clone(),
                        line,
                        from: from.clone(),
                        to: to.clone(),
                        why: "upward import".into(),
                    });
                }
            }
            edges
                .entry(here.clone())
                .or_default()
                .entry(target)
                .or_insert(line);
        }
    }
    out.extend(loop_violations(&edges, &modules));
    out.sort();
    out.dedup();
    Ok(out)
}

/// A violation for each loop of the file graph, at the first file's
/// import of the next.
fn loop_violations(
    edges: &BTreeMap<Vec<String>, BTreeMap<Vec<String>, usize>>,
    modules: &BTreeMap<Vec<String>, String>,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for cycle in loops(edges) {
        let names: Vec<String> = cycle.iter().map(|m| m.join("::")).collect();
        let first = &cycle[0];
        let line = edges[first]
            .get(&cycle[1 % cycle.len()])
            .copied()
            .unwrap_or(1);
        out.push(Violation {
            file: modules[first].clone(),
            line,
            from: names[0].clone(),
            to: names[1 % names.len()].clone(),
            why: format!("import loop: {} → {}", names.join(" → "), names[0]),
        });
    }
    out
}

/// Every loop of the file graph: one cycle through each strongly connected
/// component of more than one file (Tarjan), as the files along it.
fn loops(edges: &BTreeMap<Vec<String>, BTreeMap<Vec<String>, usize>>) -> Vec<Vec<Vec<String>>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeMap<Vec<String>, usize>>,
        index: BTreeMap<&'a Vec<String>, (usize, usize)>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        components: Vec<Vec<&'a Vec<String>>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a Vec<String>) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flat_map(|e| e.keys()) {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[w].1.min(self.index[v].1);
                    if let Some(e) = self.index.get_mut(v) {
                        e.1 = low;
                    }
                } else if self.on_stack.contains(w) {
                    let low = self.index[w].0.min(self.index[v].1);
                    if let Some(e) = self.index.get_mut(v) {
                        e.1 = low;
                    }
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    let mut out = Vec::new();
    for component in t.components.into_iter().filter(|c| c.len() > 1) {
        let members: BTreeSet<&Vec<String>> = component.iter().copied().collect();
        let start = *members.iter().next().expect("non-empty");
        out.push(cycle_through(edges, &members, start));
    }
    out
}

/// A shortest cycle from `start` back to it inside `members` (breadth first).
fn cycle_through(
    edges: &BTreeMap<Vec<String>, BTreeMap<Vec<String>, usize>>,
    members: &BTreeSet<&Vec<String>>,
    start: &Vec<String>,
) -> Vec<Vec<String>> {
    let mut previous: BTreeMap<&Vec<String>, &Vec<String>> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for w in edges.get(v).into_iter().flat_map(|e| e.keys()) {
            if !members.contains(w) {
                continue;
            }
            if w == start {
                let mut path = vec![v.clone()];
                let mut at = v;
                while at != start {
                    at = previous[at];
                    path.push(at.clone());
                }
                path.reverse();
                return path;
            }
            if !previous.contains_key(w) {
                previous.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    vec![start.clone()]
}

/// Test files: under a `tests` folder, `tests.rs` or `*_tests.rs`.
pub(crate) fn is_test_file(rel: &Path) -> bool {
    rel.iter().any(|p| p == "tests")
        || rel
            .file_stem()
            .is_some_and(|s| s == "tests" || s.to_string_lossy().ends_with("_tests"))
}

/// Drops every item marked `#[cfg(test)]`: the attribute and the item after
/// it, up to its `;` or the `}` closing its first brace.
pub(crate) fn without_test_items(tokens: Vec<(usize, String)>) -> Vec<(usize, String)> {
    const ATTR: [&str; 7] = ["#", "[", "cfg", "(", "test", ")", "]"];
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let is_attr = tokens.len() - i >= ATTR.len()
            && ATTR.iter().zip(&tokens[i..]).all(|(a, (_, t))| a == t);
        if !is_attr {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        i += ATTR.len();
        let mut depth = 0usize;
        while i < tokens.len() {
            let t = tokens[i].1.as_str();
            i += 1;
            match t {
                "{" => depth += 1,
                "}" => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                ";" if depth == 0 => break,
                _ => {}
            }
        }
    }
    out
}

pub(crate) fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// `plan/candidates/gemm.rs` → `[plan, candidates, gemm]`; `plan/mod.rs` →
/// `[plan]`; `lib.rs` → `[]`; `main.rs` → `[main]` (a binary's root).
fn module_path_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs").to_string();
        if stem != "mod" && stem != "lib" {
            parts.push(stem);
        }
    }
    parts
}

/// Resolves a path (`crate::a::b`, `super::x`, `self::y`) written in module
/// `here` to an absolute module path (without `crate`).
fn resolve(here: &[String], path: &[String]) -> Option<Vec<String>> {
    let first = path.first()?;
    let (mut base, rest): (Vec<String>, &[String]) = match first.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "super" | "self" => (here.to_vec(), path),
        _ => return None,
    };
    let mut rest = rest;
    while let Some(seg) = rest.first() {
        match seg.as_str() {
            "super" => {
                base.pop()?;
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Every path starting with `crate`, `super` or `self` (each alternative of
/// a `{…}` group expanded one level per top-level segment), with its line.
fn paths(tokens: &[(usize, String)]) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let (line, ref t) = tokens[i];
        let starts = matches!(t.as_str(), "crate" | "super" | "self");
        let preceded_by_sep = i > 0 && tokens[i - 1].1 == "::";
        if starts && !preceded_by_sep {
            let mut j = i;
            walk(tokens, &mut j, &[], line, &mut out);
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Reads `seg :: seg :: …` from `tokens[*j]`, expanding one `{ … }` group.
fn walk(
    tokens: &[(usize, String)],
    j: &mut usize,
    prefix: &[String],
    line: usize,
    out: &mut Vec<(usize, Vec<String>)>,
) {
    let mut path = prefix.to_vec();
    while let Some((_, t)) = tokens.get(*j) {
        if !is_ident(t) {
            break;
        }
        path.push(t.clone());
        *j += 1;
        if tokens.get(*j).is_none_or(|(_, t)| t != "::") {
            break;
        }
        *j += 1;
        if tokens.get(*j).is_some_and(|(_, t)| t == "{") {
            *j += 1;
            // One alternative per comma, each a path relative to `path`.
            while let Some((l, t)) = tokens.get(*j) {
                if t == "}" {
                    *j += 1;
                    return;
                }
                if is_ident(t) {
                    walk(tokens, j, &path, *l, out);
                } else {
                    *j += 1;
                }
            }
            return;
        }
    }
    if !path.is_empty() {
        out.push((line, path));
    }
}

pub(crate) fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Identifiers, `::` and single punctuation, with line numbers; comments,
/// strings and char literals dropped.
pub(crate) fn tokens(text: &str) -> Vec<(usize, String)> {
    let b: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && b.get(i + 1) == Some(&'*') {
            i = skip_block_comment(&b, i, &mut line);
        } else if c == 'r' && is_raw_string(&b, i) {
            i = skip_raw_string(&b, i, &mut line);
        } else if c == '"' {
            i = skip_string(&b, i, &mut line);
        } else if c == '\'' {
            i = skip_char_or_lifetime_quote(&b, i);
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push((line, b[start..i].iter().collect()));
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push((line, "::".into()));
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            out.push((line, c.to_string()));
            i += 1;
        }
    }
    out
}

/// Past a (nested) block comment starting at `i`, counting its lines.
fn skip_block_comment(b: &[char], mut i: usize, line: &mut usize) -> usize {
    let mut depth = 0;
    while i < b.len() {
        if b[i] == '/' && b.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            if b[i] == '\n' {
                *line += 1;
            }
            i += 1;
        }
    }
    i
}

/// Whether the `r` at `i` opens a raw string (`r"…"`, `r#"…"#`).
fn is_raw_string(b: &[char], i: usize) -> bool {
    if !(b.get(i + 1) == Some(&'"') || b.get(i + 1) == Some(&'#')) {
        return false;
    }
    let mut k = i + 1;
    while b.get(k) == Some(&'#') {
        k += 1;
    }
    b.get(k) == Some(&'"')
}

/// Past the raw string whose `r` is at `i`, counting its lines.
fn skip_raw_string(b: &[char], mut i: usize, line: &mut usize) -> usize {
    let mut hashes = 0;
    i += 1;
    while b[i] == '#' {
        hashes += 1;
        i += 1;
    }
    i += 1; // opening quote
    while i < b.len() {
        if b[i] == '"' && (0..hashes).all(|h| b.get(i + 1 + h) == Some(&'#')) {
            i += 1 + hashes;
            break;
        }
        if b[i] == '\n' {
            *line += 1;
        }
        i += 1;
    }
    i
}

/// Past the string whose opening quote is at `i` (escapes skipped),
/// counting its lines.
fn skip_string(b: &[char], mut i: usize, line: &mut usize) -> usize {
    i += 1;
    while i < b.len() && b[i] != '"' {
        if b[i] == '\\' {
            i += 1;
        }
        if b.get(i) == Some(&'\n') {
            *line += 1;
        }
        i += 1;
    }
    i + 1
}

/// Past a char literal (`'a'`, `'\n'`, `'\u{..}'`) at `i`, or past the
/// quote of a lifetime (`'a`: its ident follows).
fn skip_char_or_lifetime_quote(b: &[char], i: usize) -> usize {
    if b.get(i + 2) == Some(&'\'') {
        i + 3
    } else if b.get(i + 1) == Some(&'\\') {
        let mut i = i + 2;
        while i < b.len() && b[i] != '\'' {
            i += 1;
        }
        i + 1
    } else {
        i + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn finds_grouped_inline_and_super_paths() {
        let text = "use crate::{ir::Graph, kernel::{Kernel, args}};\n\
                    // use crate::emit::x;\n\
                    fn f() { let s = \"crate::emit\"; crate::lower::run(); super::super::plan::x(); }\n\
                    #[cfg(test)]\n\
                    mod tests { use crate::pipeline::X; }\n";
        let got: Vec<Vec<String>> = paths(&without_test_items(tokens(text)))
            .into_iter()
            .map(|(_, p)| p)
            .collect();
        assert!(got.contains(&s(&["crate", "ir", "Graph"])));
        assert!(got.contains(&s(&["crate", "kernel", "Kernel"])));
        assert!(got.contains(&s(&["crate", "kernel", "args"])));
        assert!(got.contains(&s(&["crate", "lower", "run"])));
        assert!(!got.iter().any(|p| p.contains(&"emit".to_string())));
        assert!(!got.iter().any(|p| p.contains(&"pipeline".to_string())));
        let here = s(&["place", "map"]);
        let sup = got
            .iter()
            .find(|p| p[0] == "super")
            .expect("super path found");
        assert_eq!(resolve(&here, sup), Some(s(&["plan", "x"])));
    }

    fn tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn flags_upward_import_and_loops_of_any_length_at_any_depth() {
        let dir = tree(
            "layers",
            &[
                ("lib.rs", "pub mod ir; pub mod plan;"),
                ("ir/mod.rs", "mod a; pub use a::A; use crate::plan::Plan;"),
                ("plan/mod.rs", "pub mod deep;"),
                // A three-file loop two folders down.
                ("plan/deep/mod.rs", "mod x; mod y; mod z;"),
                ("plan/deep/x.rs", "use super::y::Y;"),
                ("plan/deep/y.rs", "use crate::plan::deep::z::Z;"),
                ("plan/deep/z.rs", "fn f() { super::x::f(); }"),
                // Declaring and re-exporting children is not a loop.
                ("ir/a.rs", "use super::Shape;"),
                // Tests may reach anywhere.
                ("plan/tests.rs", "use crate::plan::deep::x::X;"),
            ],
        );
        let v = check(&dir, "src", &["ir", "plan"]).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!((v[0].from.as_str(), v[0].to.as_str()), ("ir", "plan"));
        assert_eq!(v[1].file, "src/plan/deep/x.rs", "{v:?}");
        assert!(
            v[1].why
                .contains("plan::deep::x → plan::deep::y → plan::deep::z → plan::deep::x"),
            "{v:?}"
        );
    }

    #[test]
    fn manifests_name_only_allowed_ipuc_crates() {
        let manifest = "[package]\nname = \"ipuc-sim\"\n\n[dependencies]\nipuc-target.workspace = true\n\
                        thiserror = \"2\"\n\n[dev-dependencies]\nipuc-core = { path = \"../core\" }\n";
        assert_eq!(
            ipuc_dependencies(manifest),
            vec![(5, "ipuc-target".to_string()), (9, "ipuc-core".to_string())]
        );
    }
}
