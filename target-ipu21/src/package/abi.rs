//! The calling convention packages are built for: ipuc's native kernels
//! (`crate::ipu21::kernel_abi`) as emission needs it, and the name of the
//! host call every inference goes through. A device that runs packages
//! needs only these and the package itself, never the compiler's stages.
//! What a kernel call computes, its argument block and operand types are
//! the kernel ABI's vocabulary, in [`crate::kernel`].

use alloc::vec::Vec;

use crate::ipu21::kernel_abi as abi;
use crate::kernel::{self, Kernel, KernelAbi, KernelArgs, KernelSymbol};

/// Name of the host call that writes an inference's inputs and reads its
/// outputs (`HostCall::name`).
pub const INFERENCE_CALL: &str = "inference";

/// ipuc's kernel calling convention: codelet symbols, argument blocks,
/// registers.
#[derive(Clone, Copy, Debug, Default)]
pub struct NativeKernelAbi;

impl KernelAbi for NativeKernelAbi {
    fn families(&self) -> Vec<&'static str> {
        KernelSymbol::ALL.iter().map(|s| s.name()).collect()
    }
    fn family(&self, kernel: &Kernel) -> &'static str {
        KernelArgs::new(kernel.clone()).symbol().name()
    }
    fn arg_block(&self, kernel: &Kernel) -> Vec<u32> {
        kernel::encode(&KernelArgs::new(kernel.clone()))
    }
    fn operand_register(&self, index: usize) -> Option<u8> {
        match index {
            0 => Some(abi::OUTPUT_REGISTER),
            i if i - 1 < abi::MAX_INPUTS => Some(abi::FIRST_INPUT_REGISTER + (i - 1) as u8),
            _ => None,
        }
    }
    fn arg_register(&self) -> u8 {
        abi::ARG_BLOCK_REGISTER
    }
}
