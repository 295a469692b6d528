//! `ipuc asm FILE.S -o OUT [--listing] [--at ADDR]`: assemble and link one
//! file, write its words little-endian, optionally print a listing.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context};
use ipuc_core::asm::{assemble, link, Image, LinkOptions};
use ipuc_target::ipu21::sram::{ELEMENT_SIZE, TILE_MEMORY_BASE, TILE_MEMORY_END};

/// `--at`'s default, as `--help` shows it once: the application load base
/// (`APPLICATION_LOAD_BASE`; a test keeps the two equal).
const DEFAULT_AT: &str = "0x4C010";

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
    /// Load address, 4-byte aligned, inside tile SRAM (unless given: the
    /// application load base).
    #[arg(long, value_parser = super::isa::parse_u32, default_value = DEFAULT_AT)]
    at: u32,
    /// Define an absolute symbol NAME=VALUE for names the file leaves
    /// undefined (repeatable; overrides the runtime layout defaults).
    /// Checked at parse time: a malformed one is a usage error (exit 2).
    #[arg(long = "defsym", value_name = "NAME=VALUE", value_parser = parse_defsym)]
    defsym: Vec<(String, i64)>,
}

/// Link-time symbols `device-asm/static_runtime.S` expects from the image
/// builder. `ipuc asm` supplies these defaults (taken from
/// `core::runtime::link_symbols`) so the runtime assembles and lists on its
/// own; they apply only to names the source leaves undefined.
pub fn runtime_layout_defaults() -> Vec<(&'static str, u32)> {
    let mut defs = ipuc_core::runtime::link_symbols().to_vec();
    // Generated supervisor code is linked right after the runtime; on its
    // own the runtime listing needs some executable address for it: the
    // second element of region 0 (facts §1.2).
    defs.push(("ipuc_program", TILE_MEMORY_BASE + ELEMENT_SIZE));
    defs
}

fn parse_defsym(s: &str) -> anyhow::Result<(String, i64)> {
    let Some((name, value)) = s.split_once('=') else {
        bail!("--defsym expects NAME=VALUE, found '{s}'");
    };
    let name = name.trim();
    // A symbol as the assembler spells one: a letter, `_`, `.` or `$`,
    // then letters, digits, `_`, `.` or `$`.
    let symbol_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$');
    if !name.starts_with(|c: char| symbol_char(c) && !c.is_ascii_digit())
        || !name.chars().all(symbol_char)
    {
        bail!("--defsym '{s}': '{name}' is not a symbol name (a letter, '_', '.' or '$', then letters, digits, '_', '.' or '$')");
    }
    let v = super::isa::parse_u32(value)
        .map_err(|e| anyhow::anyhow!("--defsym '{s}': value '{}': {e}", value.trim()))?;
    Ok((name.to_string(), v as i64))
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
            let note = line
                .note
                .as_ref()
                .map(|n| format!(" <{n}>"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{:#010x}  {:<22} {}{note}",
                line.address,
                words.join(" "),
                line.text
            );
        }
    }
    out
}

pub fn run(args: Args) -> anyhow::Result<()> {
    super::checks::distinct_files(&[("FILE", &args.file)], &[("-o", &args.output)])?;
    super::checks::output_file("-o", &args.output)?;
    let src = crate::fsio::read_string_bounded(&args.file, crate::fsio::Limit::ASSEMBLY)
        .with_context(|| format!("reading {}", args.file.display()))?;
    let name = args.file.display().to_string();
    let mut opts = LinkOptions::at(args.at);
    for (n, v) in runtime_layout_defaults() {
        opts.defines.insert(n.into(), v as i64);
    }
    for (n, v) in &args.defsym {
        opts.defines.insert(n.clone(), *v);
    }
    let obj = assemble(&name, &src)?;
    let image = link(&[obj], &opts)?;
    let end = u64::from(args.at) + 4 * image.words.len() as u64;
    if args.at < TILE_MEMORY_BASE || end > u64::from(TILE_MEMORY_END) {
        bail!(
            "{name}: the image at {:#x}..{end:#x} ({} bytes) does not lie inside tile SRAM {TILE_MEMORY_BASE:#x}..{TILE_MEMORY_END:#x}",
            args.at,
            4 * image.words.len()
        );
    }
    crate::fsio::write_atomic(&args.output, &image.to_le_bytes())
        .with_context(|| format!("writing {}", args.output.display()))?;
    if args.listing {
        let defines: Vec<String> = opts
            .defines
            .iter()
            .map(|(n, v)| format!("{n}={v:#x}"))
            .collect();
        println!(
            "# {name}: {} words at {:#x}; names left undefined resolve to: {}",
            image.words.len(),
            args.at,
            defines.join(" ")
        );
        print!("{}", listing(&image));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipuc_core::asm::assemble_and_link;

    #[test]
    fn listing_shows_labels_addresses_words_and_text() {
        let src = "start:\n setzi $m0, start\n br $m0\n.worker\nw: get $m1, $WSR\n bri start\n";
        let image = assemble_and_link("t.S", src, 0x4C010).unwrap();
        assert_eq!(
            listing(&image),
            "start:\n\
             0x0004c010  0x1904c010             setzi $m0, 0x4c010\n\
             0x0004c014  0x43000000             br $m0\n\
             w:\n\
             0x0004c018  0x41010001             get $m1, $WSR\n\
             0x0004c01c  0x40813004             bri 0x4c010 <start>\n"
        );
    }
}

#[cfg(test)]
mod runtime_tests {
    use super::*;
    use ipuc_core::asm::APPLICATION_LOAD_BASE;

    #[test]
    fn defsym_needs_a_symbol_name() {
        assert_eq!(parse_defsym("x=5").unwrap(), ("x".into(), 5));
        assert_eq!(parse_defsym(" _a.b$ =0x10").unwrap(), ("_a.b$".into(), 16));
        for bad in ["=5", " =5", "1x=5", "a b=5", "a-b=5"] {
            let err = parse_defsym(bad).unwrap_err().to_string();
            assert!(err.contains("is not a symbol name"), "{bad}: {err}");
        }
    }

    /// The static runtime on main assembles and links with the layout defaults.
    #[test]
    fn static_runtime_assembles_with_layout_defaults() {
        let src = ipuc_core::runtime::SOURCE;
        let mut opts = LinkOptions::at(APPLICATION_LOAD_BASE);
        for (n, v) in runtime_layout_defaults() {
            opts.defines.insert(n.into(), v as i64);
        }
        let obj = assemble("static_runtime.S", src).unwrap_or_else(|e| panic!("{e}"));
        let image = link(&[obj], &opts).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            image.symbol("ipuc_static_start"),
            Some(APPLICATION_LOAD_BASE)
        );
        assert!(
            image.listing.iter().all(|l| !l.text.starts_with('<')),
            "every word disassembles"
        );
    }

    #[test]
    fn defsym_parses_hex_and_decimal() {
        assert_eq!(parse_defsym("a=0x10").unwrap(), ("a".to_string(), 16));
        assert_eq!(parse_defsym("b=7").unwrap(), ("b".to_string(), 7));
        assert!(parse_defsym("c").is_err());
    }

    /// `--at`'s default is the load base, and `--help` shows it once.
    #[test]
    fn at_default_is_the_load_base_and_shown_once() {
        use clap::Args as _;
        assert_eq!(
            super::super::isa::parse_u32(DEFAULT_AT),
            Ok(APPLICATION_LOAD_BASE)
        );
        let help = Args::augment_args(clap::Command::new("asm"))
            .render_help()
            .to_string();
        let at = &help[help.find("--at").unwrap()..help.find("--defsym").unwrap()];
        assert_eq!(at.matches("default").count(), 1, "{at}");
        assert!(at.contains("[default: 0x4C010]"), "{at}");
    }
}
