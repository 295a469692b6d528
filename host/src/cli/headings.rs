//! The help headings `run`, `exec` and `compile` group their flags under
//! (`ipuc run --help`), and the check that every flag has one.
//!
//! A flag struct shared by several commands sets its heading once, on the
//! struct (`#[command(next_help_heading = …)]`), so a flag added to it
//! later inherits it; a flag of another kind inside such a struct sets its
//! own (`#[arg(help_heading = …)]`).

/// Which model, its size and its input.
pub const MODEL: &str = "Model";
/// Number formats: FP8 weights and activations.
pub const NUMERICS: &str = "Numerics";
/// How the compiler plans, schedules and links.
pub const PLANNING: &str = "Planning";
/// Files written: package, reports, profile, embedding, summary.
pub const OUTPUTS: &str = "Outputs";
/// The simulated device: locks, sync latency, cycle budget, kernel rates.
pub const DEVICE: &str = "Device (simulator)";
/// Checking the outputs against the reference.
pub const VALIDATION: &str = "Validation";
/// What is printed (global `-q` / `-v`).
pub const LOGGING: &str = "Logging";

/// Every heading, in the order `--help` shows them.
pub const ALL: [&str; 7] = [
    MODEL, NUMERICS, PLANNING, OUTPUTS, DEVICE, VALIDATION, LOGGING,
];

/// The flags of `cmd` (built, so global flags are included) that have no
/// heading or one not in [`ALL`], as `--long: heading` lines. Positional
/// arguments and clap's own `--help` / `--version` are left out.
pub fn misplaced_flags(cmd: &clap::Command) -> Vec<String> {
    let mut cmd = cmd.clone();
    cmd.build();
    cmd.get_arguments()
        .filter(|a| !a.is_positional())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .filter(|a| !a.get_help_heading().is_some_and(|h| ALL.contains(&h)))
        .map(|a| {
            let name = a
                .get_long()
                .map(|l| format!("--{l}"))
                .or_else(|| a.get_short().map(|s| format!("-{s}")))
                .unwrap_or_else(|| a.get_id().to_string());
            format!("{name}: {}", a.get_help_heading().unwrap_or("no heading"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command<A: clap::Args>(name: &'static str) -> clap::Command {
        A::augment_args(clap::Command::new(name))
    }

    /// Every flag of `run`, `exec` and `compile` sits under one of the
    /// headings: a flag added without one (or with a new heading) fails
    /// here. (The binary's test checks the same with the global flags.)
    #[test]
    fn every_run_exec_and_compile_flag_has_a_heading() {
        for cmd in [
            command::<super::super::run::Args>("run"),
            command::<super::super::exec::Args>("exec"),
            command::<super::super::compile::Args>("compile"),
        ] {
            let misplaced = misplaced_flags(&cmd);
            assert!(
                misplaced.is_empty(),
                "`ipuc {}` flags without one of the headings {ALL:?}: {misplaced:#?}",
                cmd.get_name()
            );
        }
    }

    /// The check itself finds a flag without a heading.
    #[test]
    fn a_flag_without_a_heading_is_found() {
        let cmd = clap::Command::new("x")
            .arg(clap::Arg::new("a").long("a").help_heading(MODEL))
            .arg(clap::Arg::new("b").long("b"))
            .arg(clap::Arg::new("file"));
        assert_eq!(misplaced_flags(&cmd), ["--b: no heading"]);
    }

    /// Each heading is used by `run`, and the flags come in the order of
    /// [`ALL`] (Logging's are global: the binary's test has them).
    #[test]
    fn run_help_shows_the_headings_in_order() {
        let help = command::<super::super::run::Args>("run")
            .render_help()
            .to_string();
        let at: Vec<usize> = ALL[..ALL.len() - 1]
            .iter()
            .map(|h| {
                help.find(&format!("\n{h}:\n"))
                    .unwrap_or_else(|| panic!("no `{h}:` heading in\n{help}"))
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{help}");
    }
}
