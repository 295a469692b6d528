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

use super::memory::TileMemory;

/// What a codelet sees: the calling tile's id, its SRAM and the supervisor's
/// MRF (writable, e.g. for kernels that return a value in a register).
pub struct CodeletCall<'a> {
    /// Physical tile id.
    pub tile: u16,
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
/// when the codelet knows it, the planner's estimate of the same call, kept
/// only so reports can show planner-vs-simulated error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodeletCharge {
    /// Cycles charged to the tile.
    pub cycles: u64,
    /// The compiler's estimate for this call, if known.
    pub planned: Option<u64>,
    /// Hardware rules the call breaks that the codelet records instead of
    /// faulting on (a codelet-defined bit mask; 0 = none).
    pub rule_findings: u8,
}

impl From<u64> for CodeletCharge {
    fn from(cycles: u64) -> Self {
        Self {
            cycles,
            planned: None,
            rule_findings: 0,
        }
    }
}

/// A native kernel. Returns what it costs on the calling tile.
pub trait Codelet: Send + Sync {
    /// Kernel name, for profiles and fault messages.
    fn name(&self) -> &str;
    /// Run on the tile. An `Err` becomes a codelet fault at the call site.
    fn run(&self, call: &mut CodeletCall<'_>) -> Result<CodeletCharge, String>;
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
    fn run(&self, call: &mut CodeletCall<'_>) -> Result<CodeletCharge, String> {
        (self.f)(call).map(CodeletCharge::from)
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
