//! Simulator faults: typed, with the tile, context and PC where they happened.

use ipuc_target::ipu21::topology::PhysicalTile;

use super::context::ContextId;

/// Exchange receive error classes as the hardware reports them
/// (`$CTXT_STS` bits 29:27, `docs/facts/ipu21-target.md §1.8`), for faults
/// raised by an exchange fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExchangeError {
    /// Receive clashed with an instruction access (`CLASH_INSTR`).
    ClashInstr,
    /// Receive clashed with instruction fetch (`CLASH_IFETCH`).
    ClashIfetch,
    /// Receive address outside memory (`ADDR`).
    Addr,
    /// Exchange while workers were running (`WORKERS`).
    Workers,
    /// Invalid exchange configuration (`CONF`).
    Conf,
    /// Anything the fabric cannot express with the hardware classes.
    Other,
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultKind {
    /// The word at PC is not an instruction the ISA decoder accepts.
    #[error("undecodable instruction word {word:#010x}")]
    Undecodable { word: u32 },
    /// PC is outside the executable region (`[0x4C000, 0x80000)`, word aligned).
    #[error("instruction fetch at {addr:#x} outside the executable region [0x4c000, 0x80000)")]
    FetchOutsideExecutable { addr: u32 },
    /// A load/store address is not a multiple of the access width.
    #[error("misaligned {width}-byte access at {addr:#x}")]
    Misaligned { addr: u32, width: u32 },
    /// A load/store touches bytes outside SRAM.
    #[error("{width}-byte access at {addr:#x} outside SRAM [0x4c000, 0xe8000)")]
    OutOfRange { addr: u32, width: u32 },
    /// The tile ran past the cycle limit given to `run` (runaway loop).
    #[error("ran past the cycle budget of {limit} cycles without finishing (runaway: a loop that never exits?; --cycle-budget sets the budget)")]
    CycleLimit { limit: u64 },
    /// The tile came back to a state it had been in (registers, PCs,
    /// context states, CSRs) with nothing stored and the clock not read in
    /// between, so it would repeat the same instructions forever
    /// (`watch.rs`): a loop that never exits, found long before the cycle
    /// budget. `running` is every context still issuing, with its PC.
    #[error(
        "no progress: after {instructions} more instructions the tile was back in the same state (registers, PCs, CSRs; nothing stored), so it loops forever; running: {}",
        running_list(running)
    )]
    NoProgress {
        instructions: u64,
        running: Vec<(ContextId, u32)>,
    },
    /// `trap n` executed.
    #[error("trap {code}")]
    Trap { code: u8 },
    /// An instruction this context kind may not execute (e.g. `runall` on a worker).
    #[error("`{mnemonic}` is not allowed in this context")]
    InvalidForContext { mnemonic: &'static str },
    /// `get`/`put` of a CSR the simulator does not model (or a read-only one).
    #[error(
        "{} of CSR {csr:#x}, which the simulator does not model{}",
        if *write { "write" } else { "read" },
        if *write { " as writable" } else { "" }
    )]
    UnmodelledCsr { csr: u16, write: bool },
    /// `runall` while workers from an earlier `runall` are still running.
    #[error("runall while workers are still running")]
    WorkersBusy,
    /// An exchange instruction reached the interpreter: exchange rows are
    /// resolved by the device's exchange fabric after a global sync.
    #[error("exchange instruction `{mnemonic}` executed outside an exchange superstep")]
    ExchangeInInterpreter { mnemonic: &'static str },
    /// A native codelet reported an error.
    #[error("codelet {name}: {message}")]
    Codelet { name: String, message: String },
    /// An operand of kernel `kernel`'s call breaks a kernel-ABI rule
    /// (alignment, SRAM extent, AMP placement: `docs/facts/ipu21-target.md`
    /// §2.10 rule 6). The fault's PC is the `call`.
    #[error("kernel {kernel}: {fault}")]
    KernelOperand {
        kernel: String,
        fault: super::codelet::OperandFault,
    },
    /// The exchange fabric reported a receive error on this tile.
    #[error("exchange receive error {error:?}: {detail}")]
    Exchange {
        error: ExchangeError,
        detail: String,
    },
    /// The tile called its row of exchange phase `phase` (the superstep
    /// index) holding an exchange CSR value the model does not cover.
    #[error(
        "exchange phase {phase}: row called with {} = {value:#x}, a value the exchange model does not cover",
        csr_name(*csr)
    )]
    ExchangeCsr { phase: u64, csr: u16, value: u32 },
    /// The fabric's witness stopped exchange phase `phase` (the superstep
    /// index) on this tile: a row word it cannot step, or a receive whose
    /// timing does not work out, with the event and address.
    #[error("exchange receive error {error:?}: exchange phase {phase}: {fault}")]
    ExchangeWitness {
        phase: u64,
        error: ExchangeError,
        fault: super::witness::WitnessFault,
    },
}

/// A fault with its location.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tile {} {context} at pc {pc:#x}: {kind}", .tile.get())]
pub struct SimFault {
    /// Physical tile id.
    pub tile: PhysicalTile,
    /// Context that faulted.
    pub context: ContextId,
    /// PC of the faulting instruction.
    pub pc: u32,
    pub kind: FaultKind,
}

/// `supervisor at 0x4c010, worker 0 at 0x4c100`.
pub(crate) fn running_list(running: &[(ContextId, u32)]) -> String {
    if running.is_empty() {
        return "none".into();
    }
    running
        .iter()
        .map(|(c, pc)| format!("{c} at {pc:#x}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A CSR's name, or its number.
fn csr_name(csr: u16) -> String {
    u8::try_from(csr)
        .ok()
        .and_then(|c| ipuc_target::ipu21::isa::Csr(c).name())
        .map_or_else(|| format!("CSR {csr:#x}"), str::to_string)
}
