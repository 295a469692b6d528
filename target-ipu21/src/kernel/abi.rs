//! The kernel calling convention as an interface: what emission needs to
//! call a kernel (its family symbol, argument block and registers). The
//! package format's `NativeKernelAbi` implements it; the simulator's codelets
//! decode the same blocks.

use alloc::vec::Vec;

use super::Kernel;

/// How kernels are called: argument blocks and registers. One
/// implementation is shared by emission and the simulator's codelets.
/// Entries are the symbols emission's `kernel_symbol` names, defined by its
/// kernel stubs right after the runtime (same address on every tile).
pub trait KernelAbi: Sync {
    /// Every kernel family name, in a fixed order (the stub table's order).
    fn families(&self) -> Vec<&'static str>;
    /// The family (codelet symbol) implementing `kernel`.
    fn family(&self, kernel: &Kernel) -> &'static str;
    /// The words of the kernel's argument block (shapes, dtypes, scales).
    fn arg_block(&self, kernel: &Kernel) -> Vec<u32>;
    /// Register number (`$mN`) carrying operand `index` (output first), or
    /// `None` past the last operand register.
    fn operand_register(&self, index: usize) -> Option<u8>;
    /// Register number carrying the argument block's address.
    fn arg_register(&self) -> u8;
}
