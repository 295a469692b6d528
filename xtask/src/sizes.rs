//! `cargo xtask sizes`: what does not read in a sitting — non-test files
//! over [`FILE_LINES`] lines and non-test functions over [`FN_LINES`]
//! lines (from the `fn` to its closing brace), longest first, over every
//! crate `cargo xtask layers` checks. Test files and `#[cfg(test)]` items
//! are left out, as the layer check leaves them out. A report, not a gate.

use std::path::Path;

use crate::layers::{collect, is_ident, is_test_file, tokens, without_test_items, CRATES};

/// Longest non-test file the issue #26 goal allows.
pub const FILE_LINES: usize = 800;
/// Function length above which a function counts as long.
pub const FN_LINES: usize = 80;

/// One function: its first line, name and length in lines.
#[derive(Debug, PartialEq, Eq)]
pub struct Function {
    pub line: usize,
    pub name: String,
    pub lines: usize,
}

/// Every function with a body in `text`, outside `#[cfg(test)]` items.
pub fn functions(text: &str) -> Vec<Function> {
    let toks = without_test_items(tokens(text));
    let mut out = Vec::new();
    for (i, (line, t)) in toks.iter().enumerate() {
        let Some((_, name)) = toks.get(i + 1) else {
            break;
        };
        if t != "fn" || !is_ident(name) {
            continue; // not a definition (`fn(u32)` types, other tokens)
        }
        if let Some(end) = body_end(&toks[i + 2..]) {
            out.push(Function {
                line: *line,
                name: name.clone(),
                lines: end - line + 1,
            });
        }
    }
    out
}

/// The line of the brace closing a signature's body; `None` for a
/// declaration without one (`;` outside brackets first).
fn body_end(toks: &[(usize, String)]) -> Option<usize> {
    let mut brackets = 0usize;
    let mut braces = 0usize;
    for (line, t) in toks {
        match t.as_str() {
            "(" | "[" => brackets += 1,
            ")" | "]" => brackets = brackets.saturating_sub(1),
            ";" if brackets == 0 && braces == 0 => return None,
            "{" => braces += 1,
            "}" => {
                braces = braces.checked_sub(1)?;
                if braces == 0 {
                    return Some(*line);
                }
            }
            _ => {}
        }
    }
    None
}

/// Prints the long files and functions under `root`, longest first, and
/// their counts.
pub fn report(root: &Path) -> Result<(), String> {
    let mut files = Vec::new();
    let mut long = Vec::new();
    for c in CRATES {
        let src = root.join(c.src);
        let mut paths = Vec::new();
        collect(&src, &mut paths)?;
        paths.sort();
        for path in paths {
            let rel = path.strip_prefix(&src).map_err(|e| e.to_string())?;
            if is_test_file(rel) {
                continue;
            }
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let shown = format!("{}/{}", c.src, rel.display());
            let lines = text.lines().count();
            if lines > FILE_LINES {
                files.push((lines, shown.clone()));
            }
            for f in functions(&text).into_iter().filter(|f| f.lines > FN_LINES) {
                long.push((f.lines, format!("{shown}:{} {}", f.line, f.name)));
            }
        }
    }
    files.sort_by(|a, b| b.cmp(a));
    long.sort_by(|a, b| b.cmp(a));
    for (n, f) in &files {
        println!("file {n:5} {f}");
    }
    for (n, f) in &long {
        println!("fn   {n:5} {f}");
    }
    println!(
        "xtask sizes: {} non-test files over {FILE_LINES} lines, {} non-test functions over {FN_LINES} lines",
        files.len(),
        long.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_bodies_from_fn_to_closing_brace_and_skips_tests_and_declarations() {
        let text = "fn a(x: [u8; 4]) -> u8 {\n    let s = \"}\";\n    x[0]\n}\n\
                    trait T {\n    fn b(&self);\n}\n\
                    #[cfg(test)]\nmod tests {\n    fn c() {}\n}\n\
                    fn d() { let f: fn(u8) = g; }\n";
        let got = functions(text);
        assert_eq!(
            got,
            vec![
                Function {
                    line: 1,
                    name: "a".into(),
                    lines: 4
                },
                Function {
                    line: 12,
                    name: "d".into(),
                    lines: 1
                },
            ]
        );
    }
}
