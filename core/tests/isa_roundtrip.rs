//! Property tests: `decode(encode(i)) == i` for random valid operands of every
//! form; the decoder is exact on arbitrary words; disassembly reassembles.

use ipuc_core::asm::assemble_words;
use ipuc_target::ipu21::isa::*;
use proptest::prelude::*;

fn mreg() -> impl Strategy<Value = MReg> {
    (0u8..16).prop_map(|n| MReg::new(n).unwrap())
}
fn areg() -> impl Strategy<Value = AReg> {
    (0u8..16).prop_map(|n| AReg::new(n).unwrap())
}
fn target() -> impl Strategy<Value = u32> {
    (0u32..1 << 19).prop_map(|w| w * 4)
}
fn csr() -> impl Strategy<Value = Csr> {
    any::<u8>().prop_map(Csr)
}
fn pic_field() -> impl Strategy<Value = PicField> {
    prop_oneof![Just(PicField::Pointer), Just(PicField::Format)]
}

fn control() -> impl Strategy<Value = Instruction> {
    use Instruction as I;
    prop_oneof![
        (mreg(), 0u32..1 << 20).prop_map(|(d, imm)| I::Setzi { d, imm }),
        Just(I::Nop),
        (mreg(), target()).prop_map(|(link, target)| I::Call { link, target }),
        mreg().prop_map(|r| I::Br { r }),
        mreg().prop_map(|r| I::Exitz { r }),
        (csr(), mreg()).prop_map(|(csr, s)| I::Put { csr, s }),
        (mreg(), csr()).prop_map(|(d, csr)| I::Get { d, csr }),
        (0u8..16).prop_map(|z| I::Sync {
            zone: SyncZone::new(z).unwrap()
        }),
        (0u32..16).prop_map(|code| I::Trap { code }),
        target().prop_map(|target| I::Bri { target }),
        (0u32..1 << 19).prop_map(|n| I::Delay { n }),
        (0u32..1 << 19).prop_map(|n| I::Sans { n }),
        (mreg(), target()).prop_map(|(r, target)| I::Brz { r, target }),
        (mreg(), target()).prop_map(|(r, target)| I::Brnz { r, target }),
        (mreg(), target()).prop_map(|(r, target)| I::Brnzdec { r, target }),
        (mreg(), mreg(), 0u32..4096).prop_map(|(entry, vertex_base, imm)| I::Runall {
            entry,
            vertex_base,
            imm
        }),
    ]
}

fn memory_and_alu() -> impl Strategy<Value = Instruction> {
    use Instruction as I;
    let imm16op = prop_oneof![
        Just(Imm16Op::Add),
        Just(Imm16Op::Cmpeq),
        Just(Imm16Op::Cmpult),
        Just(Imm16Op::Max),
        Just(Imm16Op::Min),
        Just(Imm16Op::SubFrom)
    ];
    let imm12op = prop_oneof![
        Just(Imm12Op::And),
        Just(Imm12Op::Or),
        Just(Imm12Op::Shl),
        Just(Imm12Op::Andc),
        Just(Imm12Op::Shr)
    ];
    let regop = prop_oneof![
        Just(RegOp::Add),
        Just(RegOp::Andc),
        Just(RegOp::Cmpeq),
        Just(RegOp::Or),
        Just(RegOp::Sort4x16lo),
        Just(RegOp::Sub),
        Just(RegOp::Xor)
    ];
    prop_oneof![
        (mreg(), mreg(), mreg(), 0u32..4096).prop_map(|(d, base, index, imm)| I::Ld32 {
            d,
            base,
            index,
            imm
        }),
        (mreg(), mreg(), mreg(), 0u32..4096).prop_map(|(s, base, index, imm)| I::St32 {
            s,
            base,
            index,
            imm
        }),
        (mreg(), mreg(), mreg(), 0u32..4096).prop_map(|(s, base, index, imm)| I::St32Step {
            s,
            base,
            index,
            imm
        }),
        (mreg(), mreg(), mreg(), mreg()).prop_map(|(d, base, index, offset)| I::Ld32Reg {
            d,
            base,
            index,
            offset
        }),
        (mreg(), mreg(), mreg()).prop_map(|(s, base, offset)| I::Stm32 { s, base, offset }),
        (imm16op, mreg(), mreg(), any::<u16>()).prop_map(|(op, d, s, raw)| {
            let imm = if op == Imm16Op::Add {
                raw as i16 as i32
            } else {
                raw as i32
            };
            I::AluImm16 { op, d, s, imm }
        }),
        (imm12op, mreg(), mreg(), 0u32..4096).prop_map(|(op, d, s, imm)| I::AluImm12 {
            op,
            d,
            s,
            imm
        }),
        (mreg(), mreg(), 0u32..4096).prop_map(|(d, s, f)| I::AluImm12 {
            op: Imm12Op::OrHigh,
            d,
            s,
            imm: f << 20
        }),
        (regop, mreg(), mreg(), mreg()).prop_map(|(op, d, a, b)| I::AluReg { op, d, a, b }),
        areg().prop_map(|d| I::ZeroA { d }),
    ]
}

fn exchange() -> impl Strategy<Value = Instruction> {
    use Instruction as I;
    let pic_target = prop_oneof![
        Just(PicTarget::Xpic),
        Just(PicTarget::XpicPaired),
        Just(PicTarget::PicPointer),
        Just(PicTarget::PicFormat)
    ];
    prop_oneof![
        (0u32..64, 0u32..1 << 18, 0u32..8).prop_map(|(n, addr, sctl)| I::Send { n, addr, sctl }),
        (0u32..4096, 0u32..1 << 11, 0u32..8).prop_map(|(n, delta, sctl)| I::SendOff {
            n,
            delta,
            sctl
        }),
        (0u32..64, pic_target, 0u32..1 << 18).prop_map(|(n, sel, v)| {
            let value = match sel {
                PicTarget::Xpic | PicTarget::XpicPaired => v & 0x1FFF,
                _ => v,
            };
            I::SendPic { n, sel, value }
        }),
        (
            0u32..64,
            0u32..1 << 18,
            0u32..8,
            pic_field(),
            0u32..1 << 14,
            0u32..1 << 18
        )
            .prop_map(|(n, addr, sctl, psel, xpic, pic)| I::SendPicP {
                n,
                addr,
                sctl,
                psel,
                xpic,
                pic
            }),
        (0u32..128, pic_field(), 0u32..1 << 18).prop_map(|(n, sel, value)| I::DelayPic {
            n,
            sel,
            value
        }),
        (0u32..4096, any::<bool>(), 0u32..1 << 13).prop_map(|(n, paired, value)| I::DelayXPic {
            n,
            paired,
            value
        }),
    ]
}

fn instruction() -> impl Strategy<Value = Instruction> {
    prop_oneof![control(), memory_and_alu(), exchange()]
}

/// `default_cases` from a fixed seed (CI); `cargo xtask proptest --cases N`
/// sets `IPUC_PROPTEST_CASES` (and `IPUC_PROPTEST_SEED` another seed).
fn proptest_config(default_cases: u32) -> ProptestConfig {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    ProptestConfig {
        cases: env("IPUC_PROPTEST_CASES").map_or(default_cases, |c| c as u32),
        rng_seed: proptest::test_runner::RngSeed::Fixed(
            env("IPUC_PROPTEST_SEED").unwrap_or(0x1BC0_2026),
        ),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(proptest_config(4096))]

    #[test]
    fn decode_inverts_encode(i in instruction()) {
        let enc = encode(&i).unwrap();
        prop_assert_eq!(enc.words().len(), i.word_count());
        prop_assert_eq!(decode(enc.words()), Ok((i.canonical(), enc.words().len())));
    }

    #[test]
    fn disassembly_reassembles_to_the_same_words(i in instruction()) {
        let enc = encode(&i).unwrap();
        let text = i.to_string();
        prop_assert_eq!(assemble_words(&text, 0).unwrap(), enc.words().to_vec(), "{}", text);
    }

    /// Any word either fails to decode or decodes to an instruction that
    /// encodes back to exactly that word (no bit is ignored).
    #[test]
    fn decoder_is_exact_on_arbitrary_words(w0 in any::<u32>(), w1 in any::<u32>()) {
        if let Ok((i, used)) = decode(&[w0, w1]) {
            let enc = encode(&i).unwrap();
            prop_assert_eq!(enc.words(), &[w0, w1][..used]);
            prop_assert_eq!(assemble_words(&i.to_string(), 0).unwrap(), [w0, w1][..used].to_vec());
        }
    }
}

#[test]
fn stray_bits_outside_fields_are_rejected() {
    // (word, what it would be without the stray bit)
    let cases: &[(u32, u32)] = &[
        (0x43A0_0001, 0x43A0_0000),           // br $m10 with bit 0
        (0x4180_0013, 0x4180_0003),           // sync with bit 4
        (0x18A8_00B7, 0x18A1_00B7),           // call with bit 19 (and a different target)
        (0x4100_0103, 0x4104_0003),           // get with bit 8
        (0x1500_F001 | 1 << 16, 0x1500_F000), // runall with [19:16] set
        (0x4D09_F081, 0x4D09_F080),           // ld32 reg-offset with bit 0
        (0x4CB8_9001, 0x4CB8_9000),           // stm32 with bit 0
        (0x4420_1021 | 1 << 16, 0x4420_1021), // reg-reg add with [19:16] set
        (0x58F0_FE31, 0x58F0_FE30),           // zero $a3 with bit 0
        (0x1118_00AC, 0x1181_00AC),           // brnz with bit 19
    ];
    for &(bad, good) in cases {
        assert!(decode(&[good]).is_ok(), "{good:#010x}");
        let err = decode(&[bad]).unwrap_err();
        assert!(
            matches!(
                err,
                IsaError::ReservedBits { .. } | IsaError::UnknownWord { .. }
            ),
            "{bad:#010x}: {err:?}"
        );
    }
    assert_eq!(
        decode(&[0x43A0_0001]).unwrap_err().to_string(),
        "word 0x43a00001 looks like `br` but has bits 0x00000001 outside its fields"
    );
    assert_eq!(
        decode(&[0x0000_0000]).unwrap_err().to_string(),
        "unknown instruction word 0x00000000"
    );
    assert_eq!(decode(&[]), Err(IsaError::NoWords));
}

#[test]
fn encode_range_errors_name_the_field_and_value() {
    let m0 = m::M0;
    let cases: Vec<(Instruction, &str)> = vec![
        (
            Instruction::setzi(m0, 1 << 20),
            "zimm20 value 1048576 out of range 0..=1048575",
        ),
        (
            Instruction::call(m0, 0x4C002),
            "target value 0x4c002 is not a multiple of 0x4",
        ),
        (
            Instruction::call(m0, 1 << 21),
            "target value 2097152 out of range 0..=2097148",
        ),
        (
            Instruction::add_imm(m0, m0, 32768),
            "imm16 value 32768 out of range -32768..=32767",
        ),
        (
            Instruction::delay(1 << 19),
            "delay value 524288 out of range 0..=524287",
        ),
        (
            Instruction::Send {
                n: 64,
                addr: 0,
                sctl: 0,
            },
            "n value 64 out of range 0..=63",
        ),
        (
            Instruction::Send {
                n: 0,
                addr: 1 << 18,
                sctl: 0,
            },
            "addr value 262144 out of range 0..=262143",
        ),
        (
            Instruction::delayxpic(0, false, 0x2000),
            "value value 8192 out of range 0..=8191",
        ),
        (
            Instruction::AluImm12 {
                op: Imm12Op::OrHigh,
                d: m0,
                s: m0,
                imm: 0x10_0001,
            },
            "imm12<<20 value 0x100001 is not a multiple of 0x100000",
        ),
    ];
    for (i, msg) in cases {
        assert_eq!(encode(&i).unwrap_err().to_string(), msg, "{i:?}");
    }
    assert_eq!(
        Instruction::send(0, 0, 0).unwrap_err().to_string(),
        "items value 0 out of range 1..=64"
    );
    assert_eq!(
        Instruction::send(64, 0x14000, 1).unwrap(),
        Instruction::Send {
            n: 63,
            addr: 0x14000,
            sctl: 1
        }
    );
}

#[test]
fn aliases_print_like_the_listings() {
    assert_eq!(Instruction::zero(m::M8).to_string(), "zero $m8");
    assert_eq!(Instruction::mov(m::M7, m::M0).to_string(), "mov $m7, $m0");
    assert_eq!(decode(&[0x19E0_0000]).unwrap().0, Instruction::Nop);
    assert_eq!(
        encode(&Instruction::setzi(m::M14, 0)).unwrap().words(),
        &[NOP_WORD]
    );
    assert_eq!(
        decode(&[0x4480_4642]).unwrap().0.to_string(),
        "sub $m4, $m4, $m8"
    );
    assert_eq!(
        decode(&[0x3919_0012]).unwrap().0.to_string(),
        "sub $m9, 18, $m1"
    );
    assert_eq!(
        decode(&[0x4244_CC00]).unwrap().0.to_string(),
        "or $m4, $m4, 0xc0000000"
    );
}
