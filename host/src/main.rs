use clap::{CommandFactory, Parser};

/// See the workspace `Cargo.toml` (`mimalloc`): fewer page faults and
/// frees than glibc for the compiler's many short-lived per-tile arrays.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// ipuc — compile Hugging Face vision towers (SigLIP, CLIP, ViT, DINOv2) for
/// the Graphcore IPU21, run them on the embedded simulator and check them
/// against an FP32 reference (every cycle figure is simulated: there is no
/// hardware backend).
#[derive(Parser)]
#[command(name = "ipuc", version = ipuc::VERSION_LONG, after_help = ipuc::exit::TABLE)]
struct Cli {
    /// Print only the `result:` line and errors (no report, no progress).
    #[arg(short, long, global = true, conflicts_with = "verbose",
          help_heading = ipuc::cli::headings::LOGGING)]
    quiet: bool,
    /// More output: `-v` the full report and every stage line, `-vv` debug
    /// diagnostics. `RUST_LOG` (e.g. `RUST_LOG=info`) sets the diagnostics
    /// filter directly.
    #[arg(short, long, global = true, action = clap::ArgAction::Count,
          help_heading = ipuc::cli::headings::LOGGING)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Instruction encoder/decoder: `isa asm`, `isa disasm`
    Isa(ipuc::cli::isa::Args),
    /// Assemble an IPU21 assembly file
    Asm(ipuc::cli::asm::Args),
    /// Run the patcher hardware check (simulated by default)
    HwCheck(ipuc::cli::hw_check::Args),
    /// C600 topology and route timing
    Topology(ipuc::cli::topology::Args),
    /// Exchange scheduler tools
    Exchange(ipuc::cli::exchange::Args),
    /// Run the FP32 reference of a vision tower (SigLIP, CLIP, ViT, DINOv2)
    /// and write its outputs as `.npy`
    Reference(ipuc::cli::reference::Args),
    /// Compile and run on the device (simulator); validate against the
    /// reference with --reference-run (without it nothing is validated:
    /// `result: NOT VALIDATED`, exit 0)
    Run(ipuc::cli::run::Args),
    /// Compile a package only
    Compile(ipuc::cli::compile::Args),
    /// Execute a package file on the device (simulator); validate with
    /// --reference-run (the package names its model, weights and numerics)
    Exec(ipuc::cli::exec::Args),
    /// Inspect a package
    Inspect(ipuc::cli::inspect::Args),
    /// Print every modelled kernel rate with its sources (Markdown)
    Rates(ipuc::cli::rates::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell)
    Completions { shell: clap_complete::Shell },
    /// Print the man page (roff) to stdout: `ipuc man > ipuc.1`
    Man,
}

/// Errors are printed as one chain of causes (`error: what: why`), without a
/// backtrace: they are user-facing diagnostics, not crashes. The exit code
/// says what happened (`ipuc::exit`, the table in `--help`); `run`,
/// `exec` and `compile` end with one `result:` line on stdout either way.
fn main() -> std::process::ExitCode {
    quiet_broken_pipe();
    no_transparent_huge_pages();
    ipuc::fsio::cleanup::install();
    let cli = Cli::parse();
    let verbosity = ipuc::output::verbosity_of(cli.quiet, cli.verbose);
    ipuc::output::set_verbosity(verbosity);
    ipuc::output::init_logging(verbosity);
    let has_result_line = matches!(
        cli.command,
        Command::Run(_) | Command::Exec(_) | Command::Compile(_)
    );
    // Every file the command writes is staged and the set renamed into
    // place as its last step (`fsio::commit_outputs`): also after an error
    // that left its outputs complete (a rejection's reports, a FAIL's
    // summary), never after a failed write.
    ipuc::fsio::begin_outputs();
    let result = dispatch(cli);
    let committed = ipuc::fsio::commit_outputs()
        .map_err(|e| anyhow::Error::new(e).context("committing this run's outputs"));
    let result = match (result, committed) {
        (Ok(()), Err(e)) => Err(e),
        (result, _) => result,
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            let code = ipuc::exit::code_of(&err);
            let outcome = match code {
                ipuc::exit::USAGE => Some("USAGE ERROR"),
                ipuc::exit::DOES_NOT_FIT => Some("REJECTED (does not fit)"),
                ipuc::exit::BAD_INPUT => Some("BAD INPUT"),
                ipuc::exit::INTERNAL => Some("INTERNAL ERROR"),
                // A validation FAIL printed its own result line.
                _ => None,
            };
            if let (true, Some(outcome)) = (has_result_line, outcome) {
                println!("result: {outcome} (exit {code})");
            }
            std::process::ExitCode::from(code)
        }
    }
}

fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Isa(args) => ipuc::cli::isa::run(args),
        Command::Asm(args) => ipuc::cli::asm::run(args),
        Command::HwCheck(args) => ipuc::cli::hw_check::run(args),
        Command::Topology(args) => ipuc::cli::topology::run(args),
        Command::Exchange(args) => ipuc::cli::exchange::run(args),
        Command::Reference(args) => ipuc::cli::reference::run(args),
        Command::Run(args) => ipuc::cli::run::run(args),
        Command::Compile(args) => ipuc::cli::compile::run(args),
        Command::Exec(args) => ipuc::cli::exec::run(args),
        Command::Inspect(args) => ipuc::cli::inspect::run(args),
        Command::Rates(args) => ipuc::cli::rates::run(args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "ipuc", &mut std::io::stdout());
            Ok(())
        }
        Command::Man => {
            clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout())?;
            Ok(())
        }
    }
}

/// Transparent huge pages off for this process (#42). With the system
/// setting `always`, the first touch of any 2 MiB-aligned stretch of a
/// fresh allocation — each simulated tile's memory, the compiler's
/// per-tile arrays — makes the kernel zero all 2 MiB of it, touched or
/// not: measured on a 2-layer So400m `exec`, system time 4.2 s → 0.6 s and
/// peak RSS 1.47 → 0.88 GB with them off, user time unchanged. (mimalloc's
/// `no_thp` feature only stops it asking for huge pages; its `allow_thp=0`
/// option does this same `prctl`, but only from the environment.) Nothing
/// computed depends on it.
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and only sets a flag
    // of this process's memory map.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Output piped into a reader that stops early (`ipuc inspect pkg | head`,
/// `asm --listing`, `exchange bench`) ends the process quietly, as for any
/// Unix filter: Rust ignores SIGPIPE, which turns every later `println!` into
/// a panic on a broken pipe, so the default action is restored.
fn quiet_broken_pipe() {
    #[cfg(unix)]
    // SAFETY: called first in `main`, before any thread exists; setting a
    // signal's disposition to SIG_DFL has no other precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand, recursively, with its path (`ipuc run`, …).
    fn commands() -> Vec<(String, clap::Command)> {
        fn walk(path: String, cmd: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
            for sub in cmd.get_subcommands() {
                walk(format!("{path} {}", sub.get_name()), sub, out);
            }
            out.push((path, cmd.clone()));
        }
        let mut cmd = Cli::command();
        cmd.build();
        let mut out = Vec::new();
        walk("ipuc".into(), &cmd, &mut out);
        out
    }

    /// `run`, `exec` and `compile` group every flag, the global `-q`/`-v`
    /// included, under one of the headings.
    #[test]
    fn every_run_exec_and_compile_flag_has_a_heading() {
        for (path, cmd) in commands() {
            if !["ipuc run", "ipuc exec", "ipuc compile"].contains(&path.as_str()) {
                continue;
            }
            let misplaced = ipuc::cli::headings::misplaced_flags(&cmd);
            assert!(misplaced.is_empty(), "`{path}`: {misplaced:#?}");
            let help = cmd.clone().render_help().to_string();
            assert!(help.contains("\nLogging:\n"), "`{path} --help`:\n{help}");
        }
    }

    /// Help is for users: no rustdoc link syntax (``[`NAME`]``), which clap
    /// copies from doc comments verbatim, in any command's help.
    #[test]
    fn no_help_text_has_rustdoc_links() {
        for (path, cmd) in commands() {
            let help = cmd.clone().render_long_help().to_string();
            for bad in ["[`", "`]", "](", "[crate::", "[super::"] {
                assert!(!help.contains(bad), "`{path} --help` has `{bad}`:\n{help}");
            }
        }
    }

    /// The top-level and `reference` help name the four families, not
    /// SigLIP alone.
    #[test]
    fn help_names_every_family() {
        for (path, cmd) in commands() {
            if !["ipuc", "ipuc reference"].contains(&path.as_str()) {
                continue;
            }
            let help = cmd.clone().render_long_help().to_string();
            for family in ["SigLIP", "CLIP", "ViT", "DINOv2"] {
                assert!(
                    help.contains(family),
                    "`{path} --help` lacks {family}:\n{help}"
                );
            }
        }
    }
}
