//! Every line of `fixtures/isa-vectors.tsv` (a copy of
//! docs/facts/isa-vectors.tsv) round-trips through the ISA: `decode(word)`
//! gives an instruction that re-encodes to `word` and disassembles with the
//! vector's mnemonic, and the vector's assembly text assembles back to `word`.

use ipuc_core::asm::assemble_words;
use ipuc_target::ipu21::isa::{decode, encode, Instruction, IsaError};

const FIXTURE: &str = include_str!("fixtures/isa-vectors.tsv");

/// ipu-stack's unexercised `and`-immediate encoding (sub-op 0). Facts §3.5 (b)
/// recommend the IPU1 sub-op 8 instead, so this word must *not* decode; its
/// text assembles to the sub-op-8 word.
const IPU_STACK_AND_CONFLICT: u32 = 0x4280_0001;
const AND_CONFLICT_SUBOP8: u32 = 0x4280_8001;

struct Vector {
    line: usize,
    word: u32,
    text: String,
}

fn parse_hex(s: &str) -> u32 {
    let digits = s.trim().trim_start_matches("0x");
    u32::from_str_radix(digits, 16).unwrap_or_else(|e| panic!("bad hex {s:?}: {e}"))
}

fn vectors() -> Vec<Vector> {
    FIXTURE
        .lines()
        .enumerate()
        .skip(1)
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let mut cols = l.split('\t');
            let word = parse_hex(cols.next().expect("word column"));
            let text = cols.next().expect("text column").to_string();
            Vector {
                line: i + 1,
                word,
                text,
            }
        })
        .collect()
}

fn is_payload(v: &Vector) -> bool {
    v.text.starts_with("(inline sendpicp payload")
}

/// `XPIC=0x640, PIC=0x15000` from a payload line's text.
fn payload_fields(text: &str) -> (u32, u32) {
    let grab = |key: &str| {
        let start = text
            .find(key)
            .unwrap_or_else(|| panic!("{key} in {text:?}"))
            + key.len();
        let rest = &text[start..];
        let end = rest
            .find(|c: char| !c.is_ascii_hexdigit() && c != 'x')
            .unwrap_or(rest.len());
        parse_hex(&rest[..end])
    };
    (grab("XPIC="), grab(" PIC="))
}

/// The payload word a prefix line names in its own text (`payload 0x...`).
fn inline_payload_in_text(text: &str) -> Option<u32> {
    let start = text.find("payload 0x")? + "payload ".len();
    let rest = &text[start..];
    let end = rest
        .find(|c: char| !c.is_ascii_hexdigit() && c != 'x')
        .unwrap_or(rest.len());
    Some(parse_hex(&rest[..end]))
}

/// Groups each `sendpicp` prefix with its payload words: the payload lines
/// that follow it, else the payload its own text names.
fn sendpicp_groups(vs: &[Vector]) -> Vec<(usize, Vec<u32>)> {
    let mut groups = Vec::new();
    for (i, v) in vs.iter().enumerate() {
        if !v.text.starts_with("sendpicp") {
            continue;
        }
        let mut payloads: Vec<u32> = vs[i + 1..]
            .iter()
            .take_while(|p| is_payload(p))
            .map(|p| p.word)
            .collect();
        if payloads.is_empty() {
            payloads.extend(inline_payload_in_text(&v.text));
        }
        assert!(
            !payloads.is_empty(),
            "line {}: sendpicp without payload",
            v.line
        );
        groups.push((i, payloads));
    }
    groups
}

fn first_token(s: &str) -> &str {
    s.split_whitespace().next().unwrap_or("")
}

#[test]
fn every_vector_word_decodes_exactly_and_reencodes() {
    let vs = vectors();
    assert!(vs.len() > 300, "fixture has {} vectors", vs.len());
    let mut checked = 0;
    for v in &vs {
        if is_payload(v) || v.text.starts_with("sendpicp") {
            continue;
        }
        if v.word == IPU_STACK_AND_CONFLICT {
            assert_eq!(
                decode(&[v.word]),
                Err(IsaError::UnknownWord { word: v.word })
            );
            continue;
        }
        let (instr, used) =
            decode(&[v.word]).unwrap_or_else(|e| panic!("line {}: {:#010x}: {e}", v.line, v.word));
        assert_eq!(used, 1);
        assert_eq!(
            encode(&instr).unwrap().words(),
            &[v.word],
            "line {}",
            v.line
        );
        let text = instr.to_string();
        assert_eq!(
            first_token(&text),
            first_token(&v.text),
            "line {}: {text} vs {}",
            v.line,
            v.text
        );
        checked += 1;
    }
    assert_eq!(
        checked,
        vs.len() - 5 /* payloads */ - 5 /* prefixes */ - 1 /* conflict */
    );
}

#[test]
fn sendpicp_prefix_and_payload_decode_as_one_instruction() {
    let vs = vectors();
    let groups = sendpicp_groups(&vs);
    assert_eq!(groups.len(), 5);
    let mut pairs = 0;
    for (i, payloads) in groups {
        let prefix = &vs[i];
        for payload in payloads {
            let (instr, used) = decode(&[prefix.word, payload]).unwrap();
            assert_eq!(used, 2);
            assert_eq!(encode(&instr).unwrap().words(), &[prefix.word, payload]);
            let Instruction::SendPicP { xpic, pic, .. } = instr else {
                panic!("line {}: decoded {instr:?}", prefix.line);
            };
            if let Some(p) = vs.iter().find(|p| is_payload(p) && p.word == payload) {
                assert_eq!((xpic, pic), payload_fields(&p.text), "line {}", p.line);
            }
            pairs += 1;
        }
        // Without its payload word the prefix is an error, never a guess.
        assert_eq!(
            decode(&[prefix.word]),
            Err(IsaError::MissingPayload { word: prefix.word })
        );
    }
    assert_eq!(pairs, 7);
}

#[test]
fn and_conflict_word_has_a_sub_op_8_counterpart() {
    let (instr, _) = decode(&[AND_CONFLICT_SUBOP8]).unwrap();
    assert_eq!(instr.to_string(), "and $m0, $m8, 1");
}

/// The vector's assembly text without its annotations: ` <label>` after
/// branch targets, parenthesised notes such as ` (0xa1)` or ` (16 words)`, and
/// the `$WSR/$SSR` alias spelling (both names are index 0x01).
fn normalize(text: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' if depth == 0 && matches!(chars.peek(), Some('<') | Some('(')) => {
                // An annotation starts: skip it including its closing bracket.
                let open = chars.next().unwrap_or(' ');
                let close = if open == '<' { '>' } else { ')' };
                depth = 1;
                for d in chars.by_ref() {
                    if d == open {
                        depth += 1;
                    } else if d == close {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out.replace("$WSR/$SSR", "$WSR").trim().to_string()
}

#[test]
fn every_vector_text_assembles_back_to_its_word() {
    let vs = vectors();
    let mut checked = 0;
    for v in &vs {
        if is_payload(v) || v.text.starts_with("sendpicp") {
            continue;
        }
        let text = normalize(&v.text);
        let words =
            assemble_words(&text, 0).unwrap_or_else(|e| panic!("line {}: {text:?}: {e}", v.line));
        if v.word == IPU_STACK_AND_CONFLICT {
            assert_eq!(
                words,
                [AND_CONFLICT_SUBOP8],
                "line {}: and-immediate uses sub-op 8",
                v.line
            );
        } else {
            assert_eq!(words, [v.word], "line {}: {text:?}", v.line);
        }
        checked += 1;
    }
    assert_eq!(checked, vs.len() - 10);
}

#[test]
fn sendpicp_text_with_payload_operands_assembles_to_both_words() {
    let vs = vectors();
    let mut pairs = 0;
    for (i, payloads) in sendpicp_groups(&vs) {
        let prefix = &vs[i];
        for payload in payloads {
            let text = format!(
                "{}, {:#x}, {:#x}",
                normalize(&prefix.text),
                payload >> 18,
                payload & 0x3FFFF
            );
            let words = assemble_words(&text, 0)
                .unwrap_or_else(|e| panic!("line {}: {text:?}: {e}", prefix.line));
            assert_eq!(
                words,
                [prefix.word, payload],
                "line {}: {text}",
                prefix.line
            );
            pairs += 1;
        }
    }
    assert_eq!(pairs, 7);
}

#[test]
fn disassembly_of_every_vector_reassembles_to_the_same_words() {
    let vs = vectors();
    let mut words: Vec<Vec<u32>> = vs
        .iter()
        .filter(|v| {
            !is_payload(v) && !v.text.starts_with("sendpicp") && v.word != IPU_STACK_AND_CONFLICT
        })
        .map(|v| vec![v.word])
        .collect();
    for (i, payloads) in sendpicp_groups(&vs) {
        words.extend(payloads.into_iter().map(|p| vec![vs[i].word, p]));
    }
    for w in &words {
        let (instr, _) = decode(w).unwrap();
        let text = instr.to_string();
        assert_eq!(&assemble_words(&text, 0).unwrap(), w, "{text}");
    }
}
