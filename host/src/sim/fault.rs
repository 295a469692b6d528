//! Simulator faults: typed, with the tile, context and PC where they happened.

use core::fmt;

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The word at PC is not an instruction the ISA decoder accepts.
    Undecodable { word: u32 },
    /// PC is outside the executable region (`[0x4C000, 0x80000)`, word aligned).
    FetchOutsideExecutable { addr: u32 },
    /// A load/store address is not a multiple of the access width.
    Misaligned { addr: u32, width: u32 },
    /// A load/store touches bytes outside SRAM.
    OutOfRange { addr: u32, width: u32 },
    /// The tile ran past the cycle limit given to `run` (runaway loop).
    CycleLimit { limit: u64 },
    /// `trap n` executed.
    Trap { code: u8 },
    /// An instruction this context kind may not execute (e.g. `runall` on a worker).
    InvalidForContext { mnemonic: &'static str },
    /// `get`/`put` of a CSR the simulator does not model (or a read-only one).
    UnmodelledCsr { csr: u16, write: bool },
    /// `runall` while workers from an earlier `runall` are still running.
    WorkersBusy,
    /// An exchange instruction reached the interpreter: exchange rows are
    /// resolved by the device's exchange fabric after a global sync.
    ExchangeInInterpreter { mnemonic: &'static str },
    /// A native codelet reported an error.
    Codelet { name: String, message: String },
    /// An operand of kernel `kernel`'s call breaks a kernel-ABI rule
    /// (alignment, SRAM extent, AMP placement: `docs/facts/ipu21-target.md`
    /// §2.10 rule 6). The fault's PC is the `call`.
    KernelOperand {
        kernel: String,
        fault: super::codelet::OperandFault,
    },
    /// The exchange fabric reported a receive error on this tile.
    Exchange {
        error: ExchangeError,
        detail: String,
    },
    /// The tile called its row of exchange phase `phase` (the superstep
    /// index) holding an exchange CSR value the model does not cover.
    ExchangeCsr { phase: u64, csr: u16, value: u32 },
    /// The fabric's witness stopped exchange phase `phase` (the superstep
    /// index) on this tile: a row word it cannot step, or a receive whose
    /// timing does not work out, with the event and address.
    ExchangeWitness {
        phase: u64,
        error: ExchangeError,
        fault: super::witness::WitnessFault,
    },
}

/// A fault with its location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimFault {
    /// Physical tile id.
    pub tile: u16,
    /// Context that faulted.
    pub context: ContextId,
    /// PC of the faulting instruction.
    pub pc: u32,
    pub kind: FaultKind,
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::Undecodable { word } => {
                write!(f, "undecodable instruction word {word:#010x}")
            }
            FaultKind::FetchOutsideExecutable { addr } => write!(
                f,
                "instruction fetch at {addr:#x} outside the executable region [0x4c000, 0x80000)"
            ),
            FaultKind::Misaligned { addr, width } => {
                write!(f, "misaligned {width}-byte access at {addr:#x}")
            }
            FaultKind::OutOfRange { addr, width } => write!(
                f,
                "{width}-byte access at {addr:#x} outside SRAM [0x4c000, 0xe8000)"
            ),
            FaultKind::CycleLimit { limit } => {
                write!(f, "ran past the cycle limit of {limit} cycles (runaway?)")
            }
            FaultKind::Trap { code } => write!(f, "trap {code}"),
            FaultKind::InvalidForContext { mnemonic } => {
                write!(f, "`{mnemonic}` is not allowed in this context")
            }
            FaultKind::UnmodelledCsr { csr, write } => write!(
                f,
                "{} of CSR {csr:#x}, which the simulator does not model{}",
                if *write { "write" } else { "read" },
                if *write { " as writable" } else { "" }
            ),
            FaultKind::WorkersBusy => write!(f, "runall while workers are still running"),
            FaultKind::ExchangeInInterpreter { mnemonic } => write!(
                f,
                "exchange instruction `{mnemonic}` executed outside an exchange superstep"
            ),
            FaultKind::Codelet { name, message } => write!(f, "codelet {name}: {message}"),
            FaultKind::KernelOperand { kernel, fault } => write!(f, "kernel {kernel}: {fault}"),
            FaultKind::Exchange { error, detail } => {
                write!(f, "exchange receive error {error:?}: {detail}")
            }
            FaultKind::ExchangeWitness {
                phase,
                error,
                fault,
            } => write!(
                f,
                "exchange receive error {error:?}: exchange phase {phase}: {fault}"
            ),
            FaultKind::ExchangeCsr { phase, csr, value } => {
                let name = u8::try_from(*csr)
                    .ok()
                    .and_then(|c| ipuc_core::ipu21::isa::Csr(c).name());
                write!(
                    f,
                    "exchange phase {phase}: row called with {} = {value:#x}, a value the exchange model does not cover",
                    name.map_or_else(|| format!("CSR {csr:#x}"), str::to_string)
                )
            }
        }
    }
}

impl fmt::Display for SimFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tile {} {} at pc {:#x}: {}",
            self.tile, self.context, self.pc, self.kind
        )
    }
}

impl std::error::Error for SimFault {}
