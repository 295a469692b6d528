//! Native codelets: the simulator's implementation of every compute kernel
//! the package calls.
//!
//! A supervisor `call $m10, entry` whose target is a kernel entry runs the
//! kernel here on the tile's SRAM through ipuc's kernel register ABI
//! ([`ipuc_target::ipu21::kernel_abi`]: `$m2` output, `$m3..=$m7` inputs,
//! `$m8` argument block, return `br $m10`) and charges the cycles of the
//! simulator's kernel timing model ([`crate::kernel_timing`], modelled
//! from the kernel's structure and the facts' measured figures). The charge
//! names the argument block the call read; the run report finds the
//! planner's estimate of the same call from it (the device never calls the
//! planner's cost model).
//!
//! The registry maps kernel symbol names (the package's kernel symbol table,
//! [`ipuc_target::kernel::KernelSymbol::name`]) to codelets; [`codelet_table`]
//! turns a tile's `(name, entry address)` pairs into the simulator's
//! [`CodeletTable`].
//!
//! ```
//! use ipuc_sim::codelets::run_kernel;
//! use ipuc_sim::TileMemory;
//! use ipuc_target::ipu21::rates::RateEnd;
//! use ipuc_target::ipu21::topology::PhysicalTile;
//! use ipuc_target::kernel::{encode, Kernel, KernelArgs, KernelSymbol};
//! use ipuc_target::numeric::DType;
//! let mut mem = TileMemory::new();
//! let args = KernelArgs::new(Kernel::Gelu { elements: 2, dtype: DType::F32, out: DType::F32 });
//! let block: Vec<u8> = encode(&args).iter().flat_map(|w| w.to_le_bytes()).collect();
//! mem.load(0x90000, &block).unwrap();
//! mem.load(0x80000, &[1.0f32, -1.0].iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
//! let mut regs = [0u32; 16];
//! (regs[2], regs[3], regs[8]) = (0x80100, 0x80000, 0x90000);
//! let charge = run_kernel(KernelSymbol::GeluTanh, RateEnd::Chosen, PhysicalTile::new(0).unwrap(), &regs, &mut mem).unwrap();
//! assert_eq!(charge.arg_block, Some(0x90000));
//! assert_eq!(charge.cycles, ipuc_sim::kernel_timing::kernel_timing(&args, &[0x80100, 0x80000, 0, 0, 0, 0], RateEnd::Chosen).total);
//! let y = f32::from_le_bytes(mem.slice(0x80100, 4).unwrap().try_into().unwrap());
//! assert!((y - 0.841192).abs() < 1e-5);
//! ```

mod call;
pub mod elements;
mod error;
pub mod math;
#[cfg(test)]
mod sim_tests;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use ipuc_target::ipu21::rates::RateEnd;
use ipuc_target::kernel::KernelSymbol;

pub use call::{run_kernel, AMP_KERNELS, AMP_OPERAND_ALIGN};
pub use error::{CodeletError, CodeletErrorKind};

use crate::{Codelet, CodeletCall, CodeletCharge, CodeletFailure, CodeletTable};

/// The codelet implementing one kernel symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NativeKernel {
    symbol: KernelSymbol,
    rates: RateEnd,
}

impl NativeKernel {
    /// The codelet for `symbol`, charging the chosen rates.
    pub const fn new(symbol: KernelSymbol) -> Self {
        Self::at(symbol, RateEnd::Chosen)
    }

    /// The codelet for `symbol`, charging every rate at `rates`'s end of
    /// its sources (for the band beside a headline).
    pub const fn at(symbol: KernelSymbol, rates: RateEnd) -> Self {
        Self { symbol, rates }
    }

    /// Its symbol.
    pub const fn symbol(&self) -> KernelSymbol {
        self.symbol
    }
}

impl Codelet for NativeKernel {
    fn name(&self) -> &str {
        self.symbol.name()
    }

    fn run(&self, call: &mut CodeletCall<'_>) -> Result<CodeletCharge, CodeletFailure> {
        run_kernel(self.symbol, self.rates, call.tile, call.regs, call.memory).map_err(|e| match e
            .kind
        {
            CodeletErrorKind::Operand(fault) => CodeletFailure::Operand(fault),
            _ => CodeletFailure::Other(e.to_string()),
        })
    }
}

/// Every codelet, by symbol, in symbol order.
pub fn registry() -> Vec<(KernelSymbol, Arc<dyn Codelet>)> {
    KernelSymbol::ALL
        .into_iter()
        .map(|s| (s, Arc::new(NativeKernel::new(s)) as Arc<dyn Codelet>))
        .collect()
}

/// The codelet for symbol name `name` (as in the package's kernel table),
/// charging rates at `rates`'s end.
pub fn codelet_by_name(name: &str, rates: RateEnd) -> Option<Arc<dyn Codelet>> {
    KernelSymbol::from_name(name).map(|s| Arc::new(NativeKernel::at(s, rates)) as Arc<dyn Codelet>)
}

/// A kernel symbol the registry does not implement.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "kernel symbol `{name}` at {entry:#x} has no native codelet (known: {})",
    KernelSymbol::ALL.map(|s| s.name()).join(", ")
)]
pub struct UnknownKernel {
    /// The name found in the package.
    pub name: String,
    /// Its entry address.
    pub entry: u32,
}

/// The simulator's codelet table for a kernel symbol table of
/// `(name, entry address)` pairs, charging rates at `rates`'s end.
pub fn codelet_table<'a>(
    symbols: impl IntoIterator<Item = (&'a str, u32)>,
    rates: RateEnd,
) -> Result<CodeletTable, UnknownKernel> {
    let mut table = CodeletTable::new();
    for (name, entry) in symbols {
        let codelet = codelet_by_name(name, rates).ok_or_else(|| UnknownKernel {
            name: name.to_owned(),
            entry,
        })?;
        table.register(entry, codelet);
    }
    Ok(table)
}
