//! `ipuc isa asm|disasm`: the IPU21 instruction encoder/decoder on the command line.

use anyhow::Context;
use ipuc_core::asm::assemble_words;
use ipuc_target::ipu21::isa::decode;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Assemble instructions (separated by `;` or newlines) and print each
    /// word as 0x%08x, one per line.
    Asm {
        /// Address the text is placed at (matters for `.`/label arithmetic and
        /// `sendpicp` alignment; branch targets are absolute).
        #[arg(long, default_value = "0", value_parser = parse_u32)]
        at: u32,
        /// Assembly text; several arguments are joined with newlines.
        #[arg(required = true)]
        text: Vec<String>,
    },
    /// Disassemble words (hex, `0x` optional); a `sendpicp` prefix takes the
    /// following word as its payload.
    Disasm {
        #[arg(required = true)]
        words: Vec<String>,
    },
}

/// Parses `0x…` hex or decimal.
pub fn parse_u32(s: &str) -> Result<u32, String> {
    let t = s.trim().replace('_', "");
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => t.parse(),
    };
    r.map_err(|e| format!("bad address/number '{s}': {e}"))
}

/// Parses an instruction word: hexadecimal with or without `0x`.
fn parse_word(s: &str) -> anyhow::Result<u32> {
    let t = s.trim().replace('_', "");
    let h = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(&t);
    u32::from_str_radix(h, 16).with_context(|| format!("bad instruction word '{s}' (expected hex)"))
}

/// The lines `ipuc isa asm` prints.
pub fn asm_lines(text: &str, at: u32) -> anyhow::Result<Vec<String>> {
    let words = assemble_words(text, at)?;
    Ok(words.iter().map(|w| format!("{w:#010x}")).collect())
}

/// The lines `ipuc isa disasm` prints: one per instruction, up to the first
/// word that does not decode (returned as the error, after the good lines).
pub fn disasm_lines(words: &[u32]) -> (Vec<String>, Option<anyhow::Error>) {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        match decode(&words[i..]) {
            Ok((instr, used)) => {
                out.push(instr.to_string());
                i += used;
            }
            Err(e) => {
                return (
                    out,
                    Some(anyhow::Error::new(e).context(format!(
                        "word {} ({:#010x})",
                        i + 1,
                        words[i]
                    ))),
                )
            }
        }
    }
    (out, None)
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Command::Asm { at, text } => {
            for l in asm_lines(&text.join("\n"), at)? {
                println!("{l}");
            }
        }
        Command::Disasm { words } => {
            let words = words
                .iter()
                .map(|w| parse_word(w))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let (lines, error) = disasm_lines(&words);
            for l in lines {
                println!("{l}");
            }
            if let Some(e) = error {
                return Err(e);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asm_prints_one_word_per_instruction() {
        assert_eq!(
            asm_lines("sync SYNCZONE_INTERNAL; put $INCOMING_MUX, $m2", 0).unwrap(),
            ["0x41800003", "0x432080a0"]
        );
    }

    #[test]
    fn asm_error_names_the_position() {
        let e = asm_lines("br 5", 0).unwrap_err().to_string();
        assert_eq!(e, "<text>:1:4: expected register, found '5'");
    }

    #[test]
    fn disasm_joins_sendpicp_prefix_and_payload() {
        let (lines, error) = disasm_lines(&[0xF54A0109, 0x19015000, 0x41800000]);
        assert_eq!(
            lines,
            [
                "sendpicp 42, 0x14021, 1, 0, 0x640, 0x15000",
                "sync SYNCZONE_RECV"
            ]
        );
        assert!(error.is_none());
        let (lines, error) = disasm_lines(&[0x43A00000, 0xF54A0109]);
        assert_eq!(lines, ["br $m10"]);
        assert_eq!(
            error.map(|e| format!("{e:#}")),
            Some(
                "word 2 (0xf54a0109): sendpicp prefix 0xf54a0109 is missing its payload word"
                    .into()
            )
        );
    }
}
