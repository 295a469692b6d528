//! A text form of a program's exchange jobs, so the scheduler can be
//! profiled and benchmarked on real phases without re-planning:
//! `IPUC_DUMP_PHASES=FILE ipuc compile …` writes them,
//! `ipuc exchange schedule-dump FILE` schedules them again.
//!
//! One job per `phase` line, then its iterated sources and transfers:
//! ```text
//! phase <step> <trip count or ->
//! iter <transfer> <stride bytes>
//! t <source physical> <source address> <words> <w32|p64> <tile>:<address> …
//! ```

use std::fmt::Write as _;

use anyhow::{bail, Context, Result};
use ipuc_core::exchange::{Destination, ExchangePhase, Transfer, Width};
use ipuc_core::lower::StepIndex;
use ipuc_core::patch::repeat::IteratedSource;
use ipuc_core::rows::PhaseJob;
use ipuc_target::ipu21::topology::PhysicalTile;

/// Writes `jobs` in the dump format.
pub fn write_jobs(jobs: &[PhaseJob]) -> String {
    let mut out = String::new();
    for j in jobs {
        let trips = j.trip_count.map_or("-".to_string(), |t| t.to_string());
        let _ = writeln!(out, "phase {} {trips}", j.step.0);
        for it in &j.iterated {
            let _ = writeln!(out, "iter {} {}", it.transfer, it.stride_bytes);
        }
        for t in &j.wire.transfers {
            let width = match t.width {
                Width::Word32 => "w32",
                Width::Paired64 => "p64",
            };
            let _ = write!(
                out,
                "t {} {} {} {width}",
                t.source.get(),
                t.source_address,
                t.words
            );
            for d in &t.destinations {
                let _ = write!(out, " {}:{}", d.tile.get(), d.address);
            }
            out.push('\n');
        }
    }
    out
}

/// Reads jobs written by [`write_jobs`].
pub fn read_jobs(text: &str) -> Result<Vec<PhaseJob>> {
    let mut jobs: Vec<PhaseJob> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = || format!("line {}", n + 1);
        let mut f = line.split_ascii_whitespace();
        let num = |s: Option<&str>| -> Result<i64> {
            s.context("missing field")?
                .parse::<i64>()
                .context("not a number")
        };
        match f.next() {
            None => continue,
            Some("phase") => {
                let step = num(f.next()).with_context(at)? as u32;
                let trip_count = match f.next() {
                    Some("-") => None,
                    other => Some(num(other).with_context(at)? as u32),
                };
                jobs.push(PhaseJob {
                    step: StepIndex(step),
                    wire: ExchangePhase::default(),
                    iterated: Vec::new(),
                    trip_count,
                    frames: Vec::new(),
                });
            }
            Some(kind @ ("iter" | "t")) => {
                let job = jobs
                    .last_mut()
                    .with_context(|| format!("{}: before any phase", at()))?;
                if kind == "iter" {
                    job.iterated.push(IteratedSource {
                        transfer: num(f.next()).with_context(at)? as usize,
                        stride_bytes: num(f.next()).with_context(at)?,
                    });
                    continue;
                }
                // Out of range (or negative, wrapped) is `TileOutOfRange`, kept typed.
                let tile = |v: i64| PhysicalTile::new(v as u32);
                let source = tile(num(f.next()).with_context(at)?).with_context(at)?;
                let source_address = num(f.next()).with_context(at)? as u32;
                let words = num(f.next()).with_context(at)? as u32;
                let width = match f.next() {
                    Some("w32") => Width::Word32,
                    Some("p64") => Width::Paired64,
                    _ => bail!("{}: width must be w32 or p64", at()),
                };
                let mut destinations = Vec::new();
                for d in f {
                    let (t, a) = d
                        .split_once(':')
                        .with_context(|| format!("{}: `{d}`", at()))?;
                    destinations.push(Destination {
                        tile: tile(t.parse().with_context(at)?).with_context(at)?,
                        address: a.parse().with_context(at)?,
                    });
                }
                job.wire.transfers.push(Transfer {
                    source,
                    source_address,
                    words,
                    destinations,
                    width,
                });
            }
            Some(other) => bail!("{}: unknown record `{other}`", at()),
        }
    }
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let p = |i| PhysicalTile::new(i).unwrap();
        let jobs = vec![
            PhaseJob {
                step: StepIndex(3),
                wire: ExchangePhase {
                    transfers: vec![Transfer {
                        source: p(0),
                        source_address: 0x60000,
                        words: 12,
                        destinations: vec![
                            Destination {
                                tile: p(5),
                                address: 0x70000,
                            },
                            Destination {
                                tile: p(9),
                                address: 0x70010,
                            },
                        ],
                        width: Width::Paired64,
                    }],
                },
                iterated: vec![IteratedSource {
                    transfer: 0,
                    stride_bytes: -64,
                }],
                trip_count: Some(27),
                frames: Vec::new(),
            },
            PhaseJob {
                step: StepIndex(4),
                wire: ExchangePhase::default(),
                iterated: Vec::new(),
                trip_count: None,
                frames: Vec::new(),
            },
        ];
        let text = write_jobs(&jobs);
        let back = read_jobs(&text).unwrap();
        assert_eq!(write_jobs(&back), text);
        assert_eq!(back[0].wire, jobs[0].wire);
        assert_eq!(back[0].iterated, jobs[0].iterated);
        assert_eq!(back[1].trip_count, None);
        assert!(read_jobs("t 0 0 1 w32 1:0").is_err());
    }
}
