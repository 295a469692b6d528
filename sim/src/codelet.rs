//! Native codelets: compute kernels implemented in Rust.
//!
//! A supervisor `call $mL, entry` whose target is a registered codelet entry
//! does not execute the words at `entry`; the simulator runs the codelet on
//! the tile's SRAM with the kernel register ABI (`$m2` output address,
//! `$m3..=$m9` inputs then scalar arguments — `docs/facts/ipu21-target.md
//! §1.5`), charges the cycles it returns, and continues at the return address
//! in `$mL`.

use std::collections::BTreeMap;
use std::sync::Arc;

use ipuc_target::ipu21::topology::PhysicalTile;

use super::memory::TileMemory;

/// What a codelet sees: the calling tile's id, its SRAM and the supervisor's
/// MRF (writable, e.g. for kernels that return a value in a register).
pub struct CodeletCall<'a> {
    /// Physical tile id.
    pub tile: PhysicalTile,
    /// Supervisor `$m0..$m15` at the call (`$m15` reads zero).
    pub regs: &'a mut [u32; 16],
    pub memory: &'a mut TileMemory,
}

impl CodeletCall<'_> {
    /// `$m2`: the output address by the kernel ABI.
    pub fn output(&self) -> u32 {
        self.regs[2]
    }

    /// `$m(3 + k)`: input or argument `k` (k ≤ 6).
    pub fn arg(&self, k: usize) -> u32 {
        self.regs.get(3 + k).copied().unwrap_or(0)
    }
}

/// What a codelet call costs: the cycles charged (the simulator's kernel
/// timing model, [`super::kernel_timing`] — modelled, not simulated) and,
/// for a native kernel, the address of the argument block it read, so a
/// report can set the planner's estimate of the same call beside it (the
/// device never calls the planner's cost model).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodeletCharge {
    /// Cycles charged to the tile.
    pub cycles: u64,
    /// The argument block the call read, if it has one.
    pub arg_block: Option<u32>,
}

impl From<u64> for CodeletCharge {
    fn from(cycles: u64) -> Self {
        Self {
            cycles,
            arg_block: None,
        }
    }
}

/// A kernel-ABI rule an operand of a call breaks (the hardware's, or the
/// calling convention's): the device reports it as
/// [`super::FaultKind::KernelOperand`] with the tile and the call's PC.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", operand_message(operand, *addr, *rule))]
pub struct OperandFault {
    /// Operand name (`out`, `a`, `b`, `q`, `k`, `v`, …).
    pub operand: &'static str,
    /// The operand's address (from its MRF register).
    pub addr: u32,
    /// The rule broken.
    pub rule: OperandRule,
}

/// The rules [`OperandFault`] names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperandRule {
    /// The operand's extent (`bytes`) is not inside SRAM.
    OutsideSram { bytes: u64 },
    /// Not a multiple of the element size `align`.
    Misaligned { align: u32 },
    /// An AMP operand not 32-byte aligned (`docs/facts/ipu21-target.md`
    /// §2.10 rule 6).
    AmpMisaligned,
    /// An AMP output in standard memory (§2.10 rule 6: the AMP writes
    /// interleaved memory).
    AmpOutputStandard,
    /// The AMP output shares effective element `element` with the left
    /// stream at `left` (§2.10 rule 6).
    AmpSharesElement { left: u32, element: u32 },
    /// The argument block claims the GEMM weights are in interleaved
    /// memory (the kernel's 940-cycle weight feed, §6) but they are not.
    WeightsNotInterleaved,
}

/// What [`OperandFault`] says: the operand, its address and the rule.
fn operand_message(operand: &str, addr: u32, rule: OperandRule) -> String {
    match rule {
        OperandRule::OutsideSram { bytes } => {
            format!("operand {operand} at {addr:#x} ({bytes} bytes) is outside SRAM")
        }
        OperandRule::Misaligned { align } => {
            format!("operand {operand} at {addr:#x} is not {align}-byte aligned")
        }
        OperandRule::AmpMisaligned => format!(
            "AMP operand {operand} at {addr:#x} is not 32-byte aligned (facts §2.10 rule 6)"
        ),
        OperandRule::AmpOutputStandard => format!(
            "AMP output {operand} at {addr:#x} is in standard memory; the AMP writes interleaved memory (facts §2.10 rule 6)"
        ),
        OperandRule::AmpSharesElement { left, element } => format!(
            "AMP output {operand} at {addr:#x} shares effective element {element} with the left stream at {left:#x} (facts §2.10 rule 6)"
        ),
        OperandRule::WeightsNotInterleaved => format!(
            "argument block claims interleaved weights but {operand} is at {addr:#x} in standard memory"
        ),
    }
}

/// Why a codelet call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodeletFailure {
    /// An operand breaks a kernel-ABI rule (typed).
    Operand(OperandFault),
    /// Anything else (argument block, codelet-specific), as text.
    Other(String),
}

/// A native kernel. Returns what it costs on the calling tile.
pub trait Codelet: Send + Sync {
    /// Kernel name, for profiles and fault messages.
    fn name(&self) -> &str;
    /// Run on the tile. An `Err` becomes a fault at the call site
    /// ([`super::FaultKind::KernelOperand`] or [`super::FaultKind::Codelet`]).
    fn run(&self, call: &mut CodeletCall<'_>) -> Result<CodeletCharge, CodeletFailure>;
}

/// A codelet made from a closure.
pub struct FnCodelet<F> {
    name: String,
    f: F,
}

impl<F> FnCodelet<F>
where
    F: Fn(&mut CodeletCall<'_>) -> Result<u64, String> + Send + Sync,
{
    pub fn new(name: impl Into<String>, f: F) -> Self {
        Self {
            name: name.into(),
            f,
        }
    }
}

impl<F> Codelet for FnCodelet<F>
where
    F: Fn(&mut CodeletCall<'_>) -> Result<u64, String> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn run(&self, call: &mut CodeletCall<'_>) -> Result<CodeletCharge, CodeletFailure> {
        (self.f)(call)
            .map(CodeletCharge::from)
            .map_err(CodeletFailure::Other)
    }
}

/// Entry address → codelet. Shared (cheaply cloned) between tiles that use
/// the same kernel placement.
#[derive(Clone, Default)]
pub struct CodeletTable {
    entries: BTreeMap<u32, Arc<dyn Codelet>>,
}

impl core::fmt::Debug for CodeletTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_map()
            .entries(
                self.entries
                    .iter()
                    .map(|(a, c)| (format!("{a:#x}"), c.name().to_owned())),
            )
            .finish()
    }
}

impl CodeletTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// Register `codelet` at byte address `entry` (replacing any previous one).
    pub fn register(&mut self, entry: u32, codelet: Arc<dyn Codelet>) {
        self.entries.insert(entry, codelet);
    }

    /// The codelet at `entry`, if any.
    #[inline]
    pub fn get(&self, entry: u32) -> Option<&Arc<dyn Codelet>> {
        if self.entries.is_empty() {
            return None;
        }
        self.entries.get(&entry)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
