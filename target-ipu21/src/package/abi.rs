//! The calling convention packages are built for: ipuc's native kernels
//! (`crate::ipu21::kernel_abi`) as emission needs it, and the name of the
//! host call every inference goes through. A device that runs packages
//! needs only these and the package itself, never the compiler's stages.
//!
//! The package's kernel ABI is also its vocabulary: what a kernel call
//! computes ([`Kernel`], the family each symbol names), its argument block
//! ([`KernelArgs`], [`encode`]/[`decode`]) and the operand element types
//! ([`DType`] — the kernels' element type, not a binding's
//! [`super::DType`]). A device reads them from here.

use alloc::vec::Vec;

use crate::ipu21::kernel_abi as abi;
use crate::kernel::{self, KernelAbi};

pub use crate::kernel::{
    attention_mode, combine_attention_partials, decode, decode_header, encode, encode_dtype,
    partials_type, AbiError, AmpProduct, GemmEpilogue, Kernel, KernelArgs, KernelSymbol,
    OperandRole,
};
pub use crate::numeric::DType;

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
