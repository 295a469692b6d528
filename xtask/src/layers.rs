//! `cargo xtask layers`: core's layers run one way.
//!
//! Every `crate::…` / `super::…` path in `core/src` is resolved to the
//! top-level module it names; a file in layer `k` may only name modules of
//! layers `< k` (or its own module). The order is [`LAYERS`], the same order
//! ARCHITECTURE.md documents. Inside one module, files must not import each
//! other in a loop (a two-file cycle `a.rs` ↔ `b.rs` is reported).
//!
//! The scan is lexical (comments, strings and char literals are skipped), so
//! it sees `use` items, grouped `use crate::{a, b::c}` and inline paths alike.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Core's layers, lowest first. A module may import only modules that come
/// earlier in this list (never a later one). Modules on one line are peers
/// in ARCHITECTURE.md but are still ordered here so the graph stays acyclic.
pub const LAYERS: &[&str] = &[
    "lookup", "ipu21", "runtime", "numeric", "ir", "kernel", "plan", "lower", "place", "exchange",
    "patch", "emit", "package", "pipeline",
];

/// One upward (or unknown) import.
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

/// Checks every `.rs` file under `src` (core's `src/`).
pub fn check(src: &Path) -> Result<Vec<Violation>, String> {
    let mut files = Vec::new();
    collect(src, &mut files)?;
    files.sort();
    let rank: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut out = Vec::new();
    // Intra-module file edges: (module, file stem) -> set of sibling stems.
    let mut edges: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let rel = file
            .strip_prefix(src)
            .map_err(|e| e.to_string())?
            .to_path_buf();
        let module_path = module_path_of(&rel);
        let Some(top) = module_path.first().cloned() else {
            continue; // lib.rs
        };
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let shown = format!("core/src/{}", rel.display());
        if !rank.contains_key(top.as_str()) {
            out.push(Violation {
                file: shown.clone(),
                line: 1,
                from: top.clone(),
                to: top.clone(),
                why: "module is not in xtask's LAYERS list".into(),
            });
            continue;
        }
        for (line, path) in paths(&text) {
            let Some(resolved) = resolve(&module_path, &path) else {
                continue;
            };
            let Some(target) = resolved.first() else {
                continue;
            };
            if *target == top {
                // Same module: record file-level edges between siblings.
                if module_path.len() >= 2 && resolved.len() >= 2 && resolved[1] != module_path[1] {
                    edges
                        .entry((top.clone(), module_path[1].clone()))
                        .or_default()
                        .insert(resolved[1].clone());
                }
                continue;
            }
            match rank.get(target.as_str()) {
                None => {
                    // `crate::alloc`-style re-exports or macros are not modules.
                    continue;
                }
                Some(&to) if to > rank[top.as_str()] => out.push(Violation {
                    file: shown.clone(),
                    line,
                    from: top.clone(),
                    to: target.clone(),
                    why: "upward import".into(),
                }),
                _ => {}
            }
        }
    }
    for ((module, a), targets) in &edges {
        for b in targets {
            if a < b
                && edges
                    .get(&(module.clone(), b.clone()))
                    .is_some_and(|back| back.contains(a))
            {
                out.push(Violation {
                    file: format!("core/src/{module}/{a}.rs"),
                    line: 1,
                    from: format!("{module}::{a}"),
                    to: format!("{module}::{b}"),
                    why: format!("import loop: {module}::{b} also names {module}::{a}"),
                });
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The only `ipuc_core` modules the device (`host/src/device`, `host/src/sim`,
/// and the native kernels it runs, `host/src/codelets`) may name outside its
/// tests: the package (with `package::abi`, the kernels' vocabulary), the
/// target facts and the number formats (ARCHITECTURE.md invariant 1).
pub const DEVICE_MAY_NAME: &[&str] = &["package", "ipu21", "numeric"];

/// The host folders that make up the device.
pub const DEVICE_DIRS: &[&str] = &["device", "sim", "codelets"];

/// Checks that the device's non-test code (files under [`DEVICE_DIRS`] of
/// `host_src`, except `tests` folders, `tests.rs`/`*_tests.rs` files and
/// `#[cfg(test)]` items) names only [`DEVICE_MAY_NAME`] of `ipuc_core`.
pub fn check_device(host_src: &Path) -> Result<Vec<Violation>, String> {
    let mut out = Vec::new();
    for dir in DEVICE_DIRS {
        let mut files = Vec::new();
        collect(&host_src.join(dir), &mut files)?;
        files.sort();
        for file in files {
            let rel = file
                .strip_prefix(host_src)
                .map_err(|e| e.to_string())?
                .to_path_buf();
            let is_test = rel.iter().any(|p| p == "tests")
                || rel
                    .file_stem()
                    .is_some_and(|s| s == "tests" || s.to_string_lossy().ends_with("_tests"));
            if is_test {
                continue;
            }
            let text =
                std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            for (line, path) in core_paths(&text) {
                let Some(module) = path.get(1) else {
                    continue;
                };
                if !DEVICE_MAY_NAME.contains(&module.as_str()) {
                    out.push(Violation {
                        file: format!("host/src/{}", rel.display()),
                        line,
                        from: format!("host::{dir}"),
                        to: format!("ipuc_core::{module}"),
                        why: format!(
                            "the device may name only ipuc_core::{{{}}}",
                            DEVICE_MAY_NAME.join(", ")
                        ),
                    });
                }
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Every `ipuc_core::…` path outside `#[cfg(test)]` items, with its line.
fn core_paths(text: &str) -> Vec<(usize, Vec<String>)> {
    let tokens = without_test_items(tokens(text));
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let preceded_by_sep = i > 0 && tokens[i - 1].1 == "::";
        if tokens[i].1 == "ipuc_core" && !preceded_by_sep {
            let mut j = i;
            walk(&tokens, &mut j, &[], tokens[i].0, &mut out);
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Drops every item marked `#[cfg(test)]`: the attribute and the item after
/// it, up to its `;` or the `}` closing its first brace.
fn without_test_items(tokens: Vec<(usize, String)>) -> Vec<(usize, String)> {
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

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
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

/// `plan/candidates/gemm.rs` → `[plan, candidates, gemm]`; `plan/mod.rs` → `[plan]`.
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
fn paths(text: &str) -> Vec<(usize, Vec<String>)> {
    let tokens = tokens(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let (line, ref t) = tokens[i];
        let starts = matches!(t.as_str(), "crate" | "super" | "self");
        let preceded_by_sep = i > 0 && tokens[i - 1].1 == "::";
        if starts && !preceded_by_sep {
            let mut j = i;
            walk(&tokens, &mut j, &[], line, &mut out);
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

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Identifiers, `::` and single punctuation, with line numbers; comments,
/// strings and char literals dropped.
fn tokens(text: &str) -> Vec<(usize, String)> {
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
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == 'r' && (b.get(i + 1) == Some(&'"') || b.get(i + 1) == Some(&'#')) && {
            // raw string r"…" / r#"…"#
            let mut k = i + 1;
            while b.get(k) == Some(&'#') {
                k += 1;
            }
            b.get(k) == Some(&'"')
        } {
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
                    line += 1;
                }
                i += 1;
            }
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if b.get(i) == Some(&'\n') {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // char literal ('a', '\n', '\u{..}') or lifetime ('a).
            if b.get(i + 2) == Some(&'\'') {
                i += 3;
            } else if b.get(i + 1) == Some(&'\\') {
                i += 2;
                while i < b.len() && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else {
                i += 1; // lifetime: skip the quote, the ident follows
            }
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
                    fn f() { let s = \"crate::emit\"; crate::lower::run(); super::super::plan::x(); }\n";
        let got: Vec<Vec<String>> = paths(text).into_iter().map(|(_, p)| p).collect();
        assert!(got.contains(&s(&["crate", "ir", "Graph"])));
        assert!(got.contains(&s(&["crate", "kernel", "Kernel"])));
        assert!(got.contains(&s(&["crate", "kernel", "args"])));
        assert!(got.contains(&s(&["crate", "lower", "run"])));
        assert!(!got.iter().any(|p| p.contains(&"emit".to_string())));
        let here = s(&["place", "map"]);
        let sup = got
            .iter()
            .find(|p| p[0] == "super")
            .expect("super path found");
        assert_eq!(resolve(&here, sup), Some(s(&["plan", "x"])));
    }

    #[test]
    fn device_names_only_package_facts_and_numbers_outside_tests() {
        let text = "use ipuc_core::package::{self, Package};\n\
                    use ipuc_core::{ipu21::sram, exchange::WordMove};\n\
                    fn f() { ipuc_core::plan::cost(); }\n\
                    #[cfg(test)]\n\
                    mod tests { use ipuc_core::lower::X; }\n\
                    #[cfg(test)]\n\
                    use ipuc_core::emit::Y;\n";
        let named: Vec<String> = core_paths(text)
            .into_iter()
            .map(|(_, p)| p[1].clone())
            .collect();
        assert_eq!(
            named,
            s(&["package", "package", "ipu21", "exchange", "plan"])
        );
        let dir = std::env::temp_dir().join(format!("xtask-device-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sim/tests")).unwrap();
        std::fs::create_dir_all(dir.join("device")).unwrap();
        std::fs::create_dir_all(dir.join("codelets")).unwrap();
        std::fs::write(dir.join("sim/a.rs"), text).unwrap();
        std::fs::write(dir.join("sim/tests/b.rs"), "use ipuc_core::plan::X;").unwrap();
        std::fs::write(dir.join("device/c_tests.rs"), "use ipuc_core::plan::X;").unwrap();
        std::fs::write(dir.join("codelets/d.rs"), "use ipuc_core::kernel::Kernel;").unwrap();
        let v = check_device(&dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let to: Vec<&str> = v.iter().map(|v| v.to.as_str()).collect();
        assert_eq!(
            to,
            [
                "ipuc_core::kernel",
                "ipuc_core::exchange",
                "ipuc_core::plan"
            ],
            "{v:?}"
        );
    }

    #[test]
    fn flags_upward_import_and_two_file_loop() {
        let dir = std::env::temp_dir().join(format!("xtask-layers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("plan")).unwrap();
        std::fs::create_dir_all(dir.join("ir")).unwrap();
        std::fs::write(dir.join("lib.rs"), "pub mod ir; pub mod plan;").unwrap();
        std::fs::write(dir.join("ir/mod.rs"), "use crate::plan::Plan;").unwrap();
        std::fs::write(dir.join("plan/mod.rs"), "use crate::ir::Graph;").unwrap();
        std::fs::write(dir.join("plan/a.rs"), "use super::b::B;").unwrap();
        std::fs::write(dir.join("plan/b.rs"), "use crate::plan::a::A;").unwrap();
        let v = check(&dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!((v[0].from.as_str(), v[0].to.as_str()), ("ir", "plan"));
        assert!(v[1].why.contains("import loop"), "{v:?}");
    }
}
