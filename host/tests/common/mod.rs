//! Helpers shared by the CLI test suites.

/// The `ipuc` arguments of a forced memory rejection of the small model
/// (`host/tests/fixtures/rejections.txt`, also read by `cargo xtask
/// browser-check`): `planner`, `placement` or `patch-data`.
pub fn rejection_args(case: &str) -> Vec<&'static str> {
    const CASES: &str = include_str!("../fixtures/rejections.txt");
    CASES
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(case)?.strip_prefix(": "))
        .unwrap_or_else(|| panic!("no case `{case}` in fixtures/rejections.txt"))
        .split_whitespace()
        .collect()
}

/// `ipuc SUBCOMMAND <case's arguments> EXTRA…`.
pub fn rejection_command<'a>(subcommand: &'a str, case: &str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![subcommand];
    args.extend(rejection_args(case));
    args.extend_from_slice(extra);
    args
}

/// Runs the `ipuc` binary under test (with the default log filter, whatever
/// `RUST_LOG` the test runner has).
pub fn ipuc(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ipuc"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("running ipuc")
}
