//! Which AMP mode a product kernel runs in and what its codelet converts to
//! get there. The hardware's rule (`docs/facts/siglip-and-fp8.md` §4): both
//! operands share one input type — FP8 only with FP8 — and FP8 accumulates
//! only into FP16 partials. Our GEMM codelets accumulate FP16 products in
//! FP32 partials (the precise choice), so an FP16 GEMM runs at the
//! FP16→FP32 rate; attention is FP16 throughout ([`attention_mode`]). An
//! operand of another type is converted first, and partials of another
//! type than the output are converted last; both conversions are work the
//! kernel does, so both cost models charge them.

use crate::ipu21::timing::AmpMode;
use crate::numeric::DType;

/// How one AMP product `out[m,n] = a[m,k] · b[k,n]` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmpProduct {
    /// The engine mode.
    pub mode: AmpMode,
    /// `a` is converted to the mode's operand type first.
    pub convert_a: bool,
    /// `b` is converted to the mode's operand type first.
    pub convert_b: bool,
    /// The partials are converted to the output type at the end.
    pub convert_out: bool,
}

impl AmpProduct {
    /// The mode and conversions for operand types `a`, `b` and output `out`.
    pub fn of(a: DType, b: DType, out: DType) -> Self {
        let is_f8 = |d: DType| matches!(d, DType::F8 { .. });
        let mode = if is_f8(a) && is_f8(b) {
            AmpMode::F8F16Partials
        } else if a == DType::F32 || b == DType::F32 {
            AmpMode::F32
        } else {
            AmpMode::F16F32Partials
        };
        let converts = |d: DType| d != operand_type(mode, d);
        AmpProduct {
            mode,
            convert_a: converts(a),
            convert_b: converts(b),
            convert_out: out.size_bytes() != mode.partials_bytes() as usize,
        }
    }

    /// The type an operand of type `d` enters the AMP in.
    pub fn operand_type(&self, d: DType) -> DType {
        operand_type(self.mode, d)
    }

    /// The partials' element type.
    pub fn partials(&self) -> DType {
        partials_type(self.mode)
    }
}

/// The element type `mode` accumulates its partials in: F32 or FP16.
pub fn partials_type(mode: AmpMode) -> DType {
    if mode.partials_bytes() == 4 {
        DType::F32
    } else {
        DType::F16
    }
}

/// The AMP mode of an attention block's products for operands of `dtype`
/// (`q·kᵀ` and `p·v`): FP16 operands into FP16 partials — attention is
/// FP16 on the device (`docs/facts/siglip-and-fp8.md` §4, the seeds' runs),
/// its scores and softmax FP16 as poplibs runs a half softmax — and F32
/// operands into F32. One definition for the codelets, both cost models
/// and the device-numerics reference.
pub fn attention_mode(dtype: DType) -> AmpMode {
    if dtype == DType::F32 {
        AmpMode::F32
    } else {
        AmpMode::F16F16Partials
    }
}

/// The type an operand of type `d` enters the AMP in for `mode`: FP8 × FP8
/// takes its operands as they are, the other modes FP32 or FP16.
fn operand_type(mode: AmpMode, d: DType) -> DType {
    match mode {
        AmpMode::F32 => DType::F32,
        AmpMode::F8F16Partials => d,
        _ => DType::F16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_follow_the_operand_rule() {
        let f8 = DType::f143(-4);
        let p = AmpProduct::of(f8, f8, DType::F16);
        assert_eq!(p.mode, AmpMode::F8F16Partials);
        assert!(!p.convert_a && !p.convert_b && !p.convert_out);
        // FP8 weights with FP16 activations: the weights are widened.
        let p = AmpProduct::of(DType::F16, f8, DType::F32);
        assert_eq!(p.mode, AmpMode::F16F32Partials);
        assert!(!p.convert_a && p.convert_b && !p.convert_out);
        // FP16 output from FP32 partials is a conversion.
        let p = AmpProduct::of(DType::F16, DType::F16, DType::F16);
        assert!(p.convert_out);
        assert_eq!(p.partials(), DType::F32);
        let p = AmpProduct::of(DType::F32, DType::F16, DType::F32);
        assert_eq!(p.mode, AmpMode::F32);
        assert!(p.convert_b && !p.convert_out);
        assert_eq!(AmpProduct::of(f8, f8, DType::F32).partials(), DType::F16);
    }
}
