use clap::Parser;

/// See the workspace `Cargo.toml` (`mimalloc`): fewer page faults and
/// frees than glibc for the compiler's many short-lived per-tile arrays.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// ipuc — compile SigLIP vision transformers for the Graphcore IPU21 and run them
/// on the embedded simulator (all figures are simulated unless a hardware
/// backend says otherwise).
#[derive(Parser)]
#[command(name = "ipuc", version, about)]
struct Cli {
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
    /// Run the FP32 reference of a SigLIP vision tower
    Reference(ipuc::cli::reference::Args),
    /// Compile, run on the device (simulator) and validate
    Run(ipuc::cli::run::Args),
    /// Compile a package only
    Compile(ipuc::cli::compile::Args),
    /// Execute a package file on the device (simulator) and validate
    Exec(ipuc::cli::exec::Args),
    /// Inspect a package
    Inspect(ipuc::cli::inspect::Args),
}

/// Errors are printed as one chain of causes (`error: what: why`), without a
/// backtrace: they are user-facing diagnostics, not crashes.
fn main() -> std::process::ExitCode {
    quiet_broken_pipe();
    ipuc::fsio::cleanup::install();
    match dispatch(Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
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
