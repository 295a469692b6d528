//! `ipuc asm FILE.S -o OUT [--listing] [--at ADDR]`: assemble and link one
//! file, write its words little-endian, optionally print a listing.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context;
use ipuc_core::target::asm::{assemble_and_link, Image, APPLICATION_LOAD_BASE};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Assembly source file.
    file: PathBuf,
    /// Output file: the linked words, little-endian, from the load address.
    #[arg(short, long)]
    output: PathBuf,
    /// Print an address / word / disassembly listing.
    #[arg(long)]
    listing: bool,
    /// Load address (default: the application load base 0x4C010).
    #[arg(long, value_parser = super::isa::parse_u32, default_value_t = APPLICATION_LOAD_BASE)]
    at: u32,
}

/// The listing text: labels on their own lines, then one line per word
/// (`sendpicp` shows prefix and payload on one line).
pub fn listing(image: &Image) -> String {
    let mut out = String::new();
    for line in &image.listing {
        for l in &line.labels {
            let _ = writeln!(out, "{l}:");
        }
        let padding = line.line == 0 || line.words.len() > 2;
        if padding {
            for (k, w) in line.words.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{:#010x}  {w:#010x}             {}",
                    line.address + 4 * k as u32,
                    line.text
                );
            }
        } else {
            let words: Vec<String> = line.words.iter().map(|w| format!("{w:#010x}")).collect();
            let _ = writeln!(
                out,
                "{:#010x}  {:<22} {}",
                line.address,
                words.join(" "),
                line.text
            );
        }
    }
    out
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let src = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    let name = args.file.display().to_string();
    let image = assemble_and_link(&name, &src, args.at).map_err(|e| anyhow::anyhow!("{e}"))?;
    std::fs::write(&args.output, image.to_le_bytes())
        .with_context(|| format!("writing {}", args.output.display()))?;
    if args.listing {
        print!("{}", listing(&image));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_shows_labels_addresses_words_and_text() {
        let image =
            assemble_and_link("t.S", "start:\n setzi $m0, start\n br $m0\n", 0x4C010).unwrap();
        assert_eq!(
            listing(&image),
            "start:\n0x0004c010  0x1904c010             setzi $m0, 0x4c010\n0x0004c014  0x43000000             br $m0\n"
        );
    }
}
