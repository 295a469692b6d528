//! Codelets called by a real supervisor program on the simulator: the
//! registers a `call $m10, entry` hands over follow the kernel ABI, cycles
//! are charged, and faults name the kernel.

use std::sync::Arc;

use ipuc_target::ipu21::isa::{encode as encode_instr, Instruction as I, MReg};
use ipuc_target::ipu21::kernel_abi::{ARG_BLOCK_REGISTER, LINK_REGISTER, OUTPUT_REGISTER};
use ipuc_target::ipu21::rates::RateEnd;
use ipuc_target::ipu21::sram::APPLICATION_LOAD_BASE;
use ipuc_target::ipu21::topology::PhysicalTile;
use ipuc_target::kernel::Kernel;
use ipuc_target::kernel::{encode, KernelArgs};
use ipuc_target::numeric::round_to_f16;
use ipuc_target::numeric::DType;

use super::codelet_table;
use crate::kernel_timing::kernel_timing;
use crate::{FaultKind, SampleKind, StopReason, Tile};

fn reg(n: u8) -> MReg {
    MReg::new(n).expect("register numbers below 16")
}

fn load_words(tile: &mut Tile, addr: u32, words: &[u32]) {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    tile.load(addr, &bytes).unwrap();
}

fn load_program(tile: &mut Tile, program: &[I]) {
    let mut p = program.to_vec();
    p.push(I::br(MReg::ZERO));
    let words: Vec<u32> = p
        .iter()
        .flat_map(|i| encode_instr(i).unwrap().words().to_vec())
        .collect();
    load_words(tile, APPLICATION_LOAD_BASE, &words);
    tile.start_supervisor(APPLICATION_LOAD_BASE);
}

const GEMM_ENTRY: u32 = 0x4D000;
const CAST_ENTRY: u32 = 0x4D008;

fn tile_with_kernels() -> Tile {
    let mut tile = Tile::new(PhysicalTile::new(3).unwrap());
    let table = codelet_table(
        [("gemm_amp", GEMM_ENTRY), ("cast", CAST_ENTRY)],
        RateEnd::Chosen,
    )
    .unwrap();
    tile.set_codelets(Arc::new(table));
    tile
}

#[test]
fn supervisor_calls_gemm_then_cast_through_the_register_abi() {
    let (a_addr, b_addr, acc, out16, gemm_args, cast_args) =
        (0x80000, 0x80100, 0x88000, 0x88100, 0x90000, 0x90040);
    let gemm = KernelArgs::new(Kernel::Gemm {
        m: 2,
        k: 3,
        n: 2,
        a: DType::F32,
        b: DType::F32,
        out: DType::F32,
        b_transposed: false,
        b_interleaved: true,
    });
    let cast = KernelArgs::new(Kernel::Cast {
        elements: 4,
        from: DType::F32,
        to: DType::F16,
    });
    let mut tile = tile_with_kernels();
    let f = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    load_words(&mut tile, a_addr, &f(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
    load_words(&mut tile, b_addr, &f(&[0.5, 1.0, 0.25, -1.0, 0.1, 2.0]));
    load_words(&mut tile, gemm_args, &encode(&gemm));
    load_words(&mut tile, cast_args, &encode(&cast));
    load_program(
        &mut tile,
        &[
            I::setzi(reg(OUTPUT_REGISTER), acc),
            I::setzi(reg(3), a_addr),
            I::setzi(reg(4), b_addr),
            I::setzi(reg(ARG_BLOCK_REGISTER), gemm_args),
            I::call(reg(LINK_REGISTER), GEMM_ENTRY),
            I::setzi(reg(OUTPUT_REGISTER), out16),
            I::setzi(reg(3), acc),
            I::setzi(reg(ARG_BLOCK_REGISTER), cast_args),
            I::call(reg(LINK_REGISTER), CAST_ENTRY),
        ],
    );
    assert_eq!(tile.run(10_000_000), Ok(StopReason::Halted));
    // [1 2 3; 4 5 6] · [0.5 1; 0.25 -1; 0.1 2] = [1.3 5; 3.85 11].
    let want = [1.3f32, 5.0, 3.85, 11.0];
    let got: Vec<f32> = (0..4)
        .map(|i| f32::from_bits(tile.memory().read_u32(acc + 4 * i).unwrap()))
        .collect();
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-6, "{got:?}");
    }
    let halves = tile.memory().slice(out16, 8).unwrap();
    for (i, w) in want.iter().enumerate() {
        let h = u16::from_le_bytes([halves[2 * i], halves[2 * i + 1]]);
        assert_eq!(ipuc_target::numeric::f16_bits_to_f32(h), round_to_f16(*w));
    }
    // Each call holds the supervisor for exactly the simulator's kernel
    // timing model's cycles (modelled), at the call's operand addresses.
    let charged: Vec<(String, u64)> = tile
        .samples()
        .iter()
        .filter_map(|s| match &s.kind {
            SampleKind::Codelet { name, .. } => Some((name.to_string(), s.end - s.start)),
            _ => None,
        })
        .collect();
    assert_eq!(
        charged,
        [
            (
                "gemm_amp".to_string(),
                kernel_timing(&gemm, &[acc, a_addr, b_addr, 0, 0, 0], RateEnd::Chosen).total
            ),
            (
                "cast".to_string(),
                kernel_timing(&cast, &[out16, acc, 0, 0, 0, 0], RateEnd::Chosen).total
            )
        ]
    );
}

#[test]
fn a_bad_argument_block_is_a_codelet_fault_naming_tile_and_address() {
    let mut tile = tile_with_kernels();
    load_program(
        &mut tile,
        &[
            I::setzi(reg(ARG_BLOCK_REGISTER), 0x90000),
            I::call(reg(LINK_REGISTER), GEMM_ENTRY),
        ],
    );
    let fault = tile.run(100_000).unwrap_err();
    match fault.kind {
        FaultKind::Codelet { name, message } => {
            assert_eq!(name, "gemm_amp");
            assert!(
                message.contains("tile 3") && message.contains("0x90000"),
                "{message}"
            );
        }
        other => panic!("unexpected fault {other:?}"),
    }
}

/// §2.10 rule 6 at the simulator layer: a supervisor `call` of `gemm_amp`
/// whose output address is 8 bytes off a 32-byte boundary faults with the
/// typed `FaultKind::KernelOperand` at the `call` (operand, address, rule).
#[test]
fn a_misaligned_amp_output_is_a_typed_kernel_operand_fault_at_the_call() {
    use crate::{OperandFault, OperandRule};
    let (a_addr, b_addr, out, args) = (0x80000, 0x80100, 0x88008, 0x90000);
    let gemm = KernelArgs::new(Kernel::Gemm {
        m: 2,
        k: 3,
        n: 2,
        a: DType::F32,
        b: DType::F32,
        out: DType::F32,
        b_transposed: false,
        b_interleaved: true,
    });
    let mut tile = tile_with_kernels();
    load_words(&mut tile, args, &encode(&gemm));
    load_program(
        &mut tile,
        &[
            I::setzi(reg(OUTPUT_REGISTER), out),
            I::setzi(reg(3), a_addr),
            I::setzi(reg(4), b_addr),
            I::setzi(reg(ARG_BLOCK_REGISTER), args),
            I::call(reg(LINK_REGISTER), GEMM_ENTRY),
        ],
    );
    let fault = tile.run(100_000).unwrap_err();
    assert_eq!(fault.tile.get(), 3);
    assert_eq!(fault.pc, APPLICATION_LOAD_BASE + 4 * 4);
    assert_eq!(
        fault.kind,
        FaultKind::KernelOperand {
            kernel: "gemm_amp".into(),
            fault: OperandFault {
                operand: "out",
                addr: out,
                rule: OperandRule::AmpMisaligned
            }
        }
    );
}
