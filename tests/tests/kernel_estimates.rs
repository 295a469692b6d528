//! The simulator's kernel timing model (`ipuc_sim::kernel_timing`, the
//! device's) beside the planner's cost model (`ipuc_core::plan::cost`, the
//! compiler's): independent by construction, so only a suite that sees both
//! crates compares them.

use ipuc_core::plan::cost::call_cycles;
use ipuc_sim::kernel_timing::kernel_timing as sim_timing;
use ipuc_target::ipu21::rates::RateEnd;
use ipuc_target::kernel::{Kernel, KernelArgs};
use ipuc_target::numeric::DType;

/// The simulator's model at the rates the planner charges.
fn kernel_timing(
    args: &KernelArgs,
    addrs: &ipuc_sim::kernel_timing::OperandAddresses,
) -> ipuc_sim::kernel_timing::KernelTiming {
    sim_timing(args, addrs, RateEnd::Chosen)
}

const STANDARD: u32 = 0x6_0000;
const INTERLEAVED: u32 = 0x9_0000;

/// Attention: two FP16→FP32-partials AMP products, a row-wise softmax and
/// the output's conversion to FP16. Where the rows split evenly over the six
/// workers and `k`/`v` sit in standard memory (the planner's assumption),
/// the two models differ only by the planner's 11-cycle launch; one query
/// row (six row passes for the workers) or interleaved `k`/`v` separate them.
#[test]
fn attention_agrees_with_the_planner_where_their_assumptions_meet() {
    let att = |q_rows, kv_rows, head_dim| {
        KernelArgs::new(Kernel::Attention {
            q_rows,
            kv_rows,
            head_dim,
            scale: 0.125,
            dtype: DType::F16,
        })
    };
    let interleaved = [INTERLEAVED; 6];
    let mut standard_kv = interleaved;
    (standard_kv[2], standard_kv[3]) = (STANDARD, STANDARD);
    let small = att(1, 4, 72);
    assert!(kernel_timing(&small, &standard_kv).total + 11 > call_cycles(&small));
    assert!(kernel_timing(&small, &interleaved).total < kernel_timing(&small, &standard_kv).total);
    // Six query rows split evenly, k/v standard: only the launch differs.
    // (48 columns: the 16 × 48 value block transposes evenly too.)
    let even = att(6, 16, 48);
    assert_eq!(
        kernel_timing(&even, &standard_kv).total + 11,
        call_cycles(&even)
    );
    // Seven rows: a second row pass per worker.
    let uneven = att(7, 16, 48);
    assert!(kernel_timing(&uneven, &standard_kv).total > call_cycles(&uneven));
}
