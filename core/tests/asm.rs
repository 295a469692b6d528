//! Assembler error messages (each checked exactly) and linker relocations.

use ipuc_core::asm::*;
use ipuc_target::ipu21::isa::NOP_WORD;

fn err(src: &str) -> String {
    match assemble_and_link("t.S", src, APPLICATION_LOAD_BASE) {
        Ok(image) => panic!("{src:?} assembled to {:x?}", image.words),
        Err(e) => e.to_string(),
    }
}

fn words(src: &str) -> Vec<u32> {
    assemble_and_link("t.S", src, APPLICATION_LOAD_BASE)
        .unwrap_or_else(|e| panic!("{e}"))
        .words
}

#[test]
fn error_messages_carry_position_and_expectation() {
    let cases: &[(&str, &str)] = &[
        ("\n\n  br 5", "t.S:3:6: expected register, found '5'"),
        ("  setzi $m0", "t.S:1:3: 'setzi' takes 2 operand(s), found 1"),
        ("frob $m0", "t.S:1:1: unknown instruction 'frob'"),
        (".bogus 1", "t.S:1:1: unknown or unsupported directive '.bogus'"),
        ("setzi $m16, 0", "t.S:1:7: no register $m16 (0..=15)"),
        ("put $NOPE, $m0", "t.S:1:5: unknown register or CSR name '$NOPE'"),
        ("put $PRNG_SEED, $m0", "t.S:1:5: CSR 0x107 is in the upper space; get/put reach 0..=255 only"),
        ("put 256, $m0", "t.S:1:5: CSR index value 256 out of range 0..=255"),
        ("setzi $m0, 0x100000", "t.S:1:1: 'setzi': zimm20 value 1048576 out of range 0..=1048575"),
        ("setzi $m0, -1", "t.S:1:12: operand value -1 out of range 0..=4294967295"),
        ("call $m10, nowhere", "t.S:1:12: undefined symbol 'nowhere'"),
        ("a:\nnop\na: nop", "t.S:3:1: symbol 'a' is already defined"),
        ("nop /* never closed\n", "t.S:1:5: unterminated /* comment"),
        ("setzi $m0, (1 + 2", "t.S:1:18: expected ')', found 'end of operand'"),
        ("setzi $m0, 1 2", "t.S:1:14: expected operator or ',', found '2'"),
        (".long 1 / 0", "t.S:1:9: division by zero in expression"),
        ("max $m0, $m1, $m2", "t.S:1:1: 'max': the register-register form has no known encoding (facts §3.3)"),
        ("xor $m0, $m1, 3", "t.S:1:1: 'xor': the immediate form has no known encoding (facts §3.3)"),
        ("sub $m0, $m1, 3", "t.S:1:1: 'sub': register minus immediate has no encoding; write `add` with the negated value"),
        ("ld32 $m0, $m1, $m2", "t.S:1:1: 'ld32' takes 4 operand(s), found 3"),
        ("st32step $m0, $m1, $m2, 1", "t.S:1:20: expected post-incremented register ($mN+=), found '$m2'"),
        ("or $m0, $m0, 0x12345", "t.S:1:1: 'or': imm12<<20 value 0x12345 is not a multiple of 0x100000"),
        ("nop\nsendpicp 0, 0, 0, 0, 0, 0", "t.S:2:1: sendpicp at 0x4c014 must be 8-byte aligned (add `.p2align 3` before it)"),
        ("sendpicp 0, 0, 0, 0, 0x4000, 0", "t.S:1:1: 'sendpicp': xpic value 16384 out of range 0..=16383"),
        (".set a, b\n.set b, a\n.long a", "t.S:2:9: '.set' chain through 'a' does not end within 256 steps: the symbols refer to each other in a cycle, or the chain is longer than the assembler follows"),
        ("call $m0, here + 2\nhere: nop", "t.S:1:1: 'call': target value 0x4c016 is not a multiple of 0x4"),
        ("setzi $m0, 1abc", "t.S:1:12: bad integer literal '1abc' (must fit 64 bits)"),
        ("@", "t.S:1:1: expected instruction, directive or label, found '@'"),
        ("nop ! x", "t.S:1:5: unexpected character '!'"),
        (".globl missing\nnop", "t.S:1:8: undefined symbol 'missing'"),
        ("sync 16", "t.S:1:6: sync zone value 16 out of range 0..=15"),
        ("sync SYNCZONE_NOWHERE", "t.S:1:6: undefined symbol 'SYNCZONE_NOWHERE'"),
        ("get $m0, $m1", "t.S:1:10: expected CSR name or index, found '$m1'"),
        ("br $m1 +=", "t.S:1:4: expected register, found '$m1+='"),
        ("br $m1 $m2", "t.S:1:8: expected ',' or end of line, found '$m2'"),
        ("setzi $m0, 1 << 64", "t.S:1:14: shift amount value 64 out of range 0..=63"),
        (".p2align 17", "t.S:1:1: .p2align exponent value 17 out of range 0..=16"),
        (".align 3", "t.S:1:1: expected power-of-two byte alignment up to 65536, found '3'"),
        (".space 6", "t.S:1:1: expected a byte count that is a multiple of 4 (at most a tile's 638976 bytes), found '6'"),
        (".space 0x9C004", "t.S:1:1: expected a byte count that is a multiple of 4 (at most a tile's 638976 bytes), found '638980'"),
        (".space 0x80000\n.space 0x80000", "t.S:2:1: the image grows to 1048576 bytes here, more than a tile's 638976 bytes of SRAM"),
        (".long (0x4000000000000000 * 4) + 5", "t.S:1:27: arithmetic overflow in expression: 4611686018427387904 * 4 does not fit 64 bits"),
        (".long 0x7fffffffffffffff + 1", "t.S:1:26: arithmetic overflow in expression: 9223372036854775807 + 1 does not fit 64 bits"),
        (".long -0x7fffffffffffffff - 2", "t.S:1:27: arithmetic overflow in expression: -9223372036854775807 - 2 does not fit 64 bits"),
        (".long -(-0x7fffffffffffffff - 1)", "t.S:1:7: arithmetic overflow in expression: -(-9223372036854775808) does not fit 64 bits"),
        (".long (-0x7fffffffffffffff - 1) / -1", "t.S:1:33: arithmetic overflow in expression: -9223372036854775808 / -1 does not fit 64 bits"),
        (".long 0xffffffff << 40", "t.S:1:18: arithmetic overflow in expression: 4294967295 << 40 does not fit 64 bits"),
        (".long 0x100000000", "t.S:1:7: 32-bit word value 4294967296 out of range -2147483648..=4294967295"),
        (".section", "t.S:1:1: '.section' takes 1 to 3 operand(s), found 0"),
        (".type f, @thing", "t.S:1:11: expected @function, @object or @notype, found 'thing'"),
        ("SYNCZONE_LOCAL: nop", "t.S:1:1: symbol 'SYNCZONE_LOCAL' is already defined"),
    ];
    for (src, msg) in cases {
        assert_eq!(&err(src), msg, "source {src:?}");
    }
    // Shifts of bit patterns that keep every set bit are fine.
    assert!(assemble_and_link("t.S", ".long (1 << 63) >> 32", APPLICATION_LOAD_BASE).is_ok());
    // The link base must be word aligned.
    assert_eq!(
        assemble_and_link("t.S", "nop", 0x4C011).unwrap_err().to_string(),
        "t.S:0:0: link address 0x4c011 is not 4-byte aligned (instructions and words sit at word addresses)"
    );
    // Hostile nesting is an error, not a stack overflow.
    let deep = format!("setzi $m0, {}1", "(".repeat(300));
    assert_eq!(
        err(&deep),
        "t.S:1:268: expression nested deeper than 256 levels"
    );
    let long = format!("setzi $m0, 1{}", "+1".repeat(300));
    assert_eq!(
        err(&long),
        "t.S:1:268: expression nested deeper than 256 levels"
    );
}

#[test]
fn branches_calls_and_setzi_resolve_to_absolute_addresses() {
    let src = "
        .text
        .globl start
        .type start, @function
    start:                      # 0x4C010
        setzi $m1, 3
    .Lloop:                     // 0x4C014
        brnzdec $m1, .Lloop
        call $m10, sub1
        setzi $m2, table
        bri start
        .size start, . - start
    sub1:                       /* 0x4C024 */
        br $m10
        .data
    table:                      // 0x4C028
        .long 1, sub1, table + 4, end - start
    end:
    ";
    let image = assemble_and_link("t.S", src, APPLICATION_LOAD_BASE).unwrap();
    assert_eq!(
        image.words,
        [
            0x1910_0003,
            0x1319_3005, // brnzdec $m1, 0x4c014
            0x18A1_3009, // call $m10, 0x4c024
            0x1924_C028, // setzi $m2, 0x4c028
            0x4081_3004, // bri 0x4c010
            0x43A0_0000,
            1,
            0x4C024,
            0x4C02C,
            0x28,
        ]
    );
    assert_eq!(image.symbol("start"), Some(0x4C010));
    assert_eq!(image.symbol(".Lloop"), Some(0x4C014));
    assert_eq!(image.symbol("end"), Some(0x4C038));
    let start = &image.symbols["start"];
    assert!(start.global && start.is_label);
    assert_eq!(start.ty, SymbolType::Function);
    assert_eq!(start.size, Some(20));
    assert_eq!(image.end(), 0x4C038);
    assert_eq!(image.to_le_bytes()[..4], [0x03, 0x00, 0x10, 0x19]);
}

#[test]
fn objects_record_symbolic_operands_as_relocations() {
    let obj = assemble("t.S", "call $m10, f\nsetzi $m0, 5\n.long f + 4\nf: br $m10").unwrap();
    assert_eq!(obj.relocations.len(), 2);
    match &obj.relocations[0].kind {
        RelocKind::Instruction { mnemonic, operands } => {
            assert_eq!(mnemonic, "call");
            assert_eq!(operands.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(obj.relocations[1].kind, RelocKind::Word32(_)));
    assert_eq!(obj.relocations[1].offset, 8);
    // Placeholder words until linked.
    assert_eq!(obj.sections[0].words[0], 0x18A0_0000);
}

#[test]
fn link_resolves_globals_across_objects_and_rejects_duplicates() {
    let a = assemble("a.S", ".globl f\nf: br $m10\n").unwrap();
    let b = assemble("b.S", "main: call $m10, f\n.Llocal: bri .Llocal\n").unwrap();
    let image = link(&[b.clone(), a.clone()], &LinkOptions::at(0x5C000)).unwrap();
    // b's code first, then a's: f = 0x5C008.
    assert_eq!(image.words, [0x18A1_7002, 0x4081_7001, 0x43A0_0000]);
    assert_eq!(image.symbol("f"), Some(0x5C008));

    let dup = assemble("c.S", ".globl f\nf: nop\n").unwrap();
    assert_eq!(
        link(&[a, dup], &LinkOptions::default())
            .unwrap_err()
            .to_string(),
        "c.S:2:1: symbol 'f' is already defined at a.S:2:1"
    );
    // A local symbol is not visible from another object.
    let hidden = assemble("d.S", "g: nop\n").unwrap();
    let user = assemble("e.S", "call $m10, g\n").unwrap();
    assert_eq!(
        link(&[hidden, user], &LinkOptions::default())
            .unwrap_err()
            .to_string(),
        "e.S:1:12: undefined symbol 'g'"
    );
}

#[test]
fn alignment_pads_code_with_nop_and_data_with_zero() {
    let w = words("nop\n.p2align 3\nsendpicp 42, 0x14021, 1, 0, 0x640, 0x15000\n.data\n.long 7\n.p2align 4\n.long 8\n");
    // 0x4C010 nop, 0x4C014 pad, 0x4C018 sendpicp (2 words), data at 0x4C020: 7, pad x3, 8 at 0x4C030.
    assert_eq!(
        w,
        [NOP_WORD, NOP_WORD, 0xF54A_0109, 0x1901_5000, 7, 0, 0, 0, 8]
    );
}

#[test]
fn forward_set_and_or_immediate_choose_their_encoding_at_link() {
    // `or` picks sub-op 9 (12-bit) or 0xC (12 bits << 20) once the value is known.
    let w = words("or $m4, $m4, HIGH\nor $m5, $m5, LOW\n.set HIGH, 0xF << 20\n.set LOW, 2\n");
    assert_eq!(w, [0x4244_C00F, 0x4255_9002]);
}

#[test]
fn registers_csr_and_zone_names_and_comments() {
    let w = words(
        "get $m0, $WSR ; and $m0, $m0, 7 // worker index\n\
         put $WORKER0_BASE, $m1 # comment\n\
         sync SYNCZONE_LOCAL\n\
         exitz $mzero\n\
         zero $a3\n\
         st32step $mzero, $m15, $m8+=, 1\n\
         ld32 $m8, $m0, $m15, $m9\n\
         runall $m0, $m15, 0\n\
         /* block\n comment */ sub $m9, 18, $m1\n",
    );
    assert_eq!(
        w,
        [
            0x4100_0001,
            0x4200_8007,
            0x4310_8021,
            0x4180_0002,
            0x43F0_4000,
            0x58F0_FE30,
            0x4EFF_8001,
            0x4D09_F080,
            0x1500_F000,
            0x3919_0012
        ]
    );
}

#[test]
fn supervisor_and_worker_sections_are_recorded_on_symbols() {
    let image = assemble_and_link(
        "t.S",
        ".supervisor\nsup: nop\n.worker\nwork: exitz $m15\n",
        0x4C010,
    )
    .unwrap();
    assert_eq!(image.symbols["sup"].context, CodeContext::Supervisor);
    assert_eq!(image.symbols["work"].context, CodeContext::Worker);
    assert_eq!(
        image
            .listing
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>(),
        ["nop", "exitz $m15"]
    );
    assert_eq!(image.listing[1].labels, ["work"]);
}

#[test]
fn caller_defined_symbols_fill_in_undefined_names_only() {
    let obj = assemble(
        "t.S",
        ".globl ext\nsetzi $m0, ext\nsetzi $m1, own\n.set own, 5\n",
    )
    .unwrap();
    let mut opts = LinkOptions::at(0x4C010);
    opts.defines.insert("ext".into(), 0x58000);
    opts.defines.insert("own".into(), 9);
    assert_eq!(
        link(std::slice::from_ref(&obj), &opts).unwrap().words,
        [0x1905_8000, 0x1910_0005]
    );
    assert_eq!(
        link(&[obj], &LinkOptions::default())
            .unwrap_err()
            .to_string(),
        "t.S:2:12: undefined symbol 'ext'"
    );
}

/// Positions count characters (a multi-byte character in a comment or a
/// string is one column), and a lexical error anywhere in the text is
/// reported before an earlier statement's error: the assembler reads one
/// statement at a time as if the whole text had been lexed first.
#[test]
fn positions_count_characters_and_lexical_errors_come_first() {
    assert_eq!(err("/* é */ nop ! x"), "t.S:1:13: unexpected character '!'");
    assert_eq!(
        err("# ünïcode\nsetzi $m0, \"ä\" !"),
        "t.S:2:16: unexpected character '!'"
    );
    assert_eq!(
        err("frob $m0\nnop ! x"),
        "t.S:2:5: unexpected character '!'"
    );
    assert_eq!(err("frob $m0\nnop €"), "t.S:2:5: unexpected character '€'");
    assert_eq!(err("frob $m0\nnop"), "t.S:1:1: unknown instruction 'frob'");
}

/// Linking without a listing gives the same words and symbols and still
/// rejects a misaligned `sendpicp`.
#[test]
fn linking_without_a_listing_keeps_words_symbols_and_checks() {
    let src = "nop\n.p2align 3\nf: sendpicp 42, 0x14021, 1, 0, 0x640, 0x15000\n.globl g\ng: br $m1\n.data\n.long 7\n";
    let obj = assemble("t.S", src).unwrap();
    let with = link(std::slice::from_ref(&obj), &LinkOptions::at(0x4C010)).unwrap();
    let without = link_refs(&[&obj], &LinkOptions::at(0x4C010).without_listing()).unwrap();
    assert_eq!(with.words, without.words);
    assert_eq!(with.symbols, without.symbols);
    assert!(!with.listing.is_empty());
    assert!(without.listing.is_empty());
    let bad = assemble("t.S", "nop\nsendpicp 0, 0, 0, 0, 0, 0").unwrap();
    assert_eq!(
        link_refs(&[&bad], &LinkOptions::at(0x4C010).without_listing())
            .unwrap_err()
            .to_string(),
        "t.S:2:1: sendpicp at 0x4c014 must be 8-byte aligned (add `.p2align 3` before it)"
    );
}

/// The operand list is fixed-capacity (`MAX_OPERANDS`): one more operand is
/// a typed error at that operand, holding it.
#[test]
fn operand_list_overflow_hands_the_operand_back() {
    assert_eq!(
        err("setzi $m0, 1, 2, 3, 4, 5, 6"),
        "t.S:1:27: 'setzi': operand '6' is one too many (no instruction takes more than 6)"
    );
    match assemble("t.S", "nop 1, 2, 3, 4, 5, 6, $m7") {
        Err(e) => match e.kind {
            AsmErrorKind::TooManyOperands { limit, extra, .. } => {
                assert_eq!(limit, MAX_OPERANDS);
                assert_eq!(extra.text, "$m7");
                assert_eq!(extra.loc, e.loc);
            }
            other => panic!("{other:?}"),
        },
        Ok(_) => panic!("seven operands assembled"),
    }
    // Six operands still reach the mnemonic's own count check.
    assert_eq!(
        err("nop 1, 2, 3, 4, 5, 6"),
        "t.S:1:1: 'nop' takes 0 operand(s), found 6"
    );
}

/// #28: a chain of 200 `.set`s (deeper than the old limit of 32) is
/// followed to its value, at assembly and at link time.
#[test]
fn long_set_chains_are_followed() {
    let mut src = String::from(".set s0, 1\n");
    for i in 1..200 {
        src.push_str(&format!(".set s{i}, s{} + 1\n", i - 1));
    }
    src.push_str(".long s199\n");
    assert_eq!(words(&src), vec![200]);
}

/// #28: a chain written in order is folded as it is defined, so its length
/// is not limited (5000 here, far past the depth followed for forward
/// references), while a cycle is still refused.
#[test]
fn in_order_set_chains_of_any_length_are_folded() {
    let mut src = String::from(".set s0, 1\n");
    for i in 1..5000 {
        src.push_str(&format!("s{i} = s{} + 1\n", i - 1));
    }
    src.push_str(".long s4999\n");
    assert_eq!(words(&src), vec![5000]);
    assert!(err(".set a, b\n.set b, a\n.long a").contains("in a cycle"));
}
