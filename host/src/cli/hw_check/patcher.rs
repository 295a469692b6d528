//! The patcher check behind `ipuc hw-check`: the runtime's scalar and
//! six-worker row patchers, run from identical memory on a simulated tile and
//! compared against the expected image over the **whole** of SRAM.
//!
//! Each case builds one tile image:
//!
//! * every SRAM byte starts as deterministic pseudo-random background, so a
//!   stray write anywhere shows up;
//! * the static runtime (`device-asm/static_runtime.S`, assembled and linked
//!   by our assembler) at `0x4C010`, followed by a small harness program;
//! * a row buffer in the executable region (`ROW`) of `4n + 16` words whose
//!   `n` destinations are distinct odd word positions in shuffled order, so
//!   every destination has an untouched guard word on each side;
//! * the byte-offset table and the replacement-word table in interleaved
//!   memory.
//!
//! The harness is the timing wrapper: it samples worker 0's `$COUNT_L`
//! (`ipuc_sample_cycle`), calls the patcher, samples again and completes.
//! The reported cycles are the difference of the two samples, so they include
//! (like the seed's hardware figures) the tail of the first sample (worker 0's
//! store and exit, the `sync 2` join, the return), the four argument
//! `setzi`s, the call and return, and the head of the second sample (`setzi`,
//! `call`, `runall`, worker 0's first four instructions).
//!
//! Expected image = initial image with the patched row words replaced, plus
//! the words the runtime itself owns: worker identity words written at
//! start-up, the completion word, the workers' argument frame on the
//! supervisor stack (worker path), and the two cycle samples (copied from the
//! result after checking `end > start`, the only values not predicted).

use std::fmt::Write as _;

use anyhow::{bail, Context as _, Result};
use ipuc_core::asm::{assemble, Image};
use ipuc_core::runtime::{self, symbols, RuntimeSource};
use ipuc_target::ipu21::sram::{layout, APPLICATION_LOAD_BASE, TILE_MEMORY_BASE, TILE_MEMORY_SIZE};

use ipuc_sim::{Device, Tile};

/// List sizes checked (issue #2): around the dispatch threshold (24), around
/// multiples of six, the seed's worst Repeat-body list (78) and a long list.
pub const SIZES: [u32; 14] = [0, 1, 7, 23, 24, 25, 29, 30, 31, 77, 78, 79, 156, 1024];

/// Row buffer: executable region, element aligned (rows are code).
pub const ROW: u32 = 0x6_0000;
/// Byte-offset table (interleaved memory).
pub const OFFSETS: u32 = 0x8_0000;
/// Replacement-word table (interleaved memory).
pub const VALUES: u32 = 0x9_0000;
/// Physical tile id of the simulated tile (any valid id; non-zero so the
/// identity words depend on it).
pub const TILE: u16 = 0x1C5;
/// Bound on simulated cycles per case (runaway guard).
const CYCLE_LIMIT: u64 = 10_000_000;

/// Which patcher entry a case calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Patcher {
    /// `ipuc_patch_row_scalar`: the supervisor loop.
    Scalar,
    /// `ipuc_patch_row_workers`: six workers, entries k, k+6, … on worker k.
    Workers,
}

impl Patcher {
    fn symbol(self) -> &'static str {
        match self {
            Patcher::Scalar => symbols::PATCH_ROW_SCALAR,
            Patcher::Workers => symbols::PATCH_ROW_WORKERS,
        }
    }
}

/// A word that differs from the expected image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub addr: u32,
    pub expected: u32,
    pub actual: u32,
}

/// Result of one (size, patcher) case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseResult {
    pub size: u32,
    pub patcher: Patcher,
    /// Simulated cycles between the two samples (wrapper included).
    pub cycles: u64,
    /// Differing words, in address order (at most [`MAX_REPORTED`]).
    pub mismatches: Vec<Mismatch>,
    /// Total number of differing words.
    pub mismatch_count: usize,
}

impl CaseResult {
    pub fn passed(&self) -> bool {
        self.mismatch_count == 0
    }
}

/// Mismatches kept per case for the report.
pub const MAX_REPORTED: usize = 8;

/// Deterministic generator for backgrounds and patch lists (xoshiro256++
/// from `rand_xoshiro`, fixed seeds; not for cryptography).
struct Rng(rand_xoshiro::Xoshiro256PlusPlus);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(rand_core::SeedableRng::seed_from_u64(seed))
    }
    fn next_u32(&mut self) -> u32 {
        rand_core::RngCore::next_u32(&mut self.0)
    }
    /// Uniform in `0..n` (multiply-shift; n > 0).
    fn below(&mut self, n: u32) -> u32 {
        ((u64::from(self.next_u32()) * u64::from(n)) >> 32) as u32
    }
}

/// The patch list of one case.
#[derive(Clone, Debug)]
pub struct PatchList {
    /// Row length in words.
    pub row_words: u32,
    /// Byte offsets into the row, in list order.
    pub offsets: Vec<u32>,
    /// Replacement words, in list order.
    pub values: Vec<u32>,
}

impl PatchList {
    /// `n` unique odd word positions of a `4n + 16`-word row, shuffled, with
    /// fresh values that differ from the words they replace.
    pub fn generate(n: u32) -> Self {
        let row_words = 4 * n + 16;
        let slots = row_words / 2 - 1; // odd positions 1, 3, …, row_words − 3
        let mut rng = Rng::new(0x5EED_0000 + u64::from(n));
        let mut positions: Vec<u32> = (0..slots).map(|j| 2 * j + 1).collect();
        // Partial Fisher–Yates: the first n are a uniform random subset in
        // random order.
        for i in 0..n as usize {
            let j = i + rng.below(slots - i as u32) as usize;
            positions.swap(i, j);
        }
        positions.truncate(n as usize);
        let offsets = positions.iter().map(|p| 4 * p).collect();
        let values = positions
            .iter()
            .map(|&p| loop {
                let v = rng.next_u32();
                if v != row_word(p) {
                    break v;
                }
            })
            .collect();
        PatchList {
            row_words,
            offsets,
            values,
        }
    }
}

/// Initial content of row word `i`: destinations and guards are all
/// recognisable (`0x0DD0_0000 | i`).
fn row_word(i: u32) -> u32 {
    0x0DD0_0000 | i
}

/// The harness program (supervisor), linked after the runtime.
fn harness_source(n: u32, patcher: Patcher) -> String {
    format!(
        "        .supervisor
        .globl {program}
        .p2align 3
{program}:
        setzi $m2, {start:#x}
        call $m10, {sample}
        setzi $m2, {ROW:#x}
        setzi $m3, {OFFSETS:#x}
        setzi $m4, {VALUES:#x}
        setzi $m5, {n}
        call $m9, {entry}
        setzi $m2, {end:#x}
        call $m10, {sample}
        bri {complete}
",
        program = symbols::PROGRAM,
        start = layout::CYCLE_SAMPLE_START,
        end = layout::CYCLE_SAMPLE_END,
        sample = symbols::SAMPLE_CYCLE,
        entry = patcher.symbol(),
        complete = symbols::COMPLETE,
    )
}

/// Runtime + harness, linked at `0x4C010`.
pub fn link_image(n: u32, patcher: Patcher, rt: &RuntimeSource) -> Result<Image> {
    let harness = assemble("<hw-check harness>", &harness_source(n, patcher))
        .context("assembling the hw-check harness")?;
    runtime::link_with_runtime_source(rt, &[harness])
        .with_context(|| format!("assembling/linking the runtime {}", rt.name))
}

fn write_words(tile: &mut Tile, addr: u32, words: &[u32]) -> Result<()> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    tile.load(addr, &bytes)
        .with_context(|| format!("placing {} words at {addr:#x}", words.len()))
}

/// Build the tile for one case: background, runtime + harness, row, tables.
pub fn build_tile(n: u32, patcher: Patcher, list: &PatchList, rt: &RuntimeSource) -> Result<Tile> {
    let image = link_image(n, patcher, rt)?;
    if image.end() > ROW {
        bail!(
            "runtime + harness end at {:#x}, past the row buffer at {ROW:#x}",
            image.end()
        );
    }
    let mut tile = Tile::new(ipuc_target::ipu21::topology::PhysicalTile::new(u32::from(
        TILE,
    ))?);
    let mut rng = Rng::new(0xB4C6_0000 + u64::from(n));
    let background: Vec<u32> = (0..TILE_MEMORY_SIZE / 4).map(|_| rng.next_u32()).collect();
    write_words(&mut tile, TILE_MEMORY_BASE, &background)?;
    write_words(&mut tile, image.base, &image.words)?;
    let row: Vec<u32> = (0..list.row_words).map(row_word).collect();
    write_words(&mut tile, ROW, &row)?;
    write_words(&mut tile, OFFSETS, &list.offsets)?;
    write_words(&mut tile, VALUES, &list.values)?;
    tile.start_supervisor(APPLICATION_LOAD_BASE);
    Ok(tile)
}

fn set_word(image: &mut [u8], addr: u32, value: u32) {
    let i = (addr - TILE_MEMORY_BASE) as usize;
    image[i..i + 4].copy_from_slice(&value.to_le_bytes());
}

fn word(image: &[u8], addr: u32) -> u32 {
    let i = (addr - TILE_MEMORY_BASE) as usize;
    u32::from_le_bytes([image[i], image[i + 1], image[i + 2], image[i + 3]])
}

/// Word-by-word comparison of two SRAM images.
pub fn compare(expected: &[u8], actual: &[u8]) -> (Vec<Mismatch>, usize) {
    let mut first = Vec::new();
    let mut count = 0;
    for (i, (e, a)) in expected
        .chunks_exact(4)
        .zip(actual.chunks_exact(4))
        .enumerate()
    {
        if e != a {
            count += 1;
            if first.len() < MAX_REPORTED {
                let addr = TILE_MEMORY_BASE + 4 * i as u32;
                first.push(Mismatch {
                    addr,
                    expected: word(expected, addr),
                    actual: word(actual, addr),
                });
            }
        }
    }
    (first, count)
}

/// Run one case. `tamper` may modify the tile before it runs (tests use it
/// to prove the check can fail).
pub fn run_case_with(
    n: u32,
    patcher: Patcher,
    rt: &RuntimeSource,
    tamper: impl FnOnce(&mut Tile),
) -> Result<CaseResult> {
    let list = PatchList::generate(n);
    let mut tile = build_tile(n, patcher, &list, rt)?;
    tamper(&mut tile);
    let mut expected = tile.memory().as_bytes().to_vec();
    let mut device = Device::new(vec![tile]);
    device
        .run(CYCLE_LIMIT)
        .with_context(|| format!("size {n}, {patcher:?} patcher"))?;
    let tile = &device.tiles()[0];
    let actual = tile.memory().as_bytes();

    for (off, value) in list.offsets.iter().zip(&list.values) {
        set_word(&mut expected, ROW + off, *value);
    }
    for k in 0..ipuc_target::ipu21::contexts::WORKERS_U32 {
        let identity = (u32::from(TILE) << 3) | k;
        set_word(
            &mut expected,
            layout::WORKER_AREA + k * layout::WORKER_AREA_STRIDE,
            identity,
        );
    }
    set_word(&mut expected, layout::COMPLETION_WORD, 1);
    if patcher == Patcher::Workers {
        let frame = layout::SUPERVISOR_STACK_TOP - 16;
        for (i, v) in [ROW, OFFSETS, VALUES, n].into_iter().enumerate() {
            set_word(&mut expected, frame + 4 * i as u32, v);
        }
    }
    let start = word(actual, layout::CYCLE_SAMPLE_START);
    let end = word(actual, layout::CYCLE_SAMPLE_END);
    if end <= start {
        bail!("size {n}, {patcher:?}: cycle samples not increasing ({start} then {end})");
    }
    set_word(&mut expected, layout::CYCLE_SAMPLE_START, start);
    set_word(&mut expected, layout::CYCLE_SAMPLE_END, end);

    let (mismatches, mismatch_count) = compare(&expected, actual);
    Ok(CaseResult {
        size: n,
        patcher,
        cycles: u64::from(end - start),
        mismatches,
        mismatch_count,
    })
}

/// Run one case unmodified.
pub fn run_case(n: u32, patcher: Patcher, rt: &RuntimeSource) -> Result<CaseResult> {
    run_case_with(n, patcher, rt, |_| {})
}

/// Scalar and worker results for one size.
#[derive(Clone, Debug)]
pub struct SizeResult {
    pub scalar: CaseResult,
    pub workers: CaseResult,
}

/// Run both patchers at every size in `sizes`.
pub fn run_sizes(sizes: &[u32], rt: &RuntimeSource) -> Result<Vec<SizeResult>> {
    sizes
        .iter()
        .map(|&n| {
            Ok(SizeResult {
                scalar: run_case(n, Patcher::Scalar, rt)?,
                workers: run_case(n, Patcher::Workers, rt)?,
            })
        })
        .collect()
}

/// Seed hardware measurements (cycles, timing wrapper included):
/// `docs/facts/seed-vit-repeat-evaluation.txt`, "Worker bulk patching".
pub const SEED_MEASURED: [(u32, u64, u64); 3] =
    [(24, 846, 450), (78, 2520, 936), (1024, 31848, 9468)];

/// Deviations beyond this are explained in the report, not tuned away.
pub const CALIBRATION_TOLERANCE_PERCENT: f64 = 15.0;

fn pass(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "FAIL"
    }
}

/// The results table, mismatch details and the final count line.
pub fn render_table(results: &[SizeResult]) -> (String, usize, usize) {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "hw-check: row-sharing patchers on the simulated IPU21 tile (cycles are simulated)"
    );
    use crate::report::text_table::{Align, TextTable};
    let mut table = TextTable::new(&[
        ("size", Align::Right),
        ("scalar cycles", Align::Right),
        ("worker cycles", Align::Right),
        ("s/w", Align::Right),
        ("scalar", Align::Right),
        ("worker", Align::Right),
    ]);
    let mut details = String::new();
    let (mut passed, mut failed) = (0, 0);
    for r in results {
        for c in [&r.scalar, &r.workers] {
            if c.passed() {
                passed += 1;
            } else {
                failed += 1;
            }
        }
        table.row(vec![
            r.scalar.size.to_string(),
            r.scalar.cycles.to_string(),
            r.workers.cycles.to_string(),
            format!("{:.2}x", r.scalar.cycles as f64 / r.workers.cycles as f64),
            pass(r.scalar.passed()).to_string(),
            pass(r.workers.passed()).to_string(),
        ]);
        for c in [&r.scalar, &r.workers] {
            for m in &c.mismatches {
                let _ = writeln!(
                    details,
                    "  {:?} size {}: word {:#x} expected {:#010x} got {:#010x}",
                    c.patcher, c.size, m.addr, m.expected, m.actual
                );
            }
            if c.mismatch_count > c.mismatches.len() {
                let _ = writeln!(
                    details,
                    "  {:?} size {}: … {} more differing words",
                    c.patcher,
                    c.size,
                    c.mismatch_count - c.mismatches.len()
                );
            }
        }
    }
    s.push_str(&table.render(0));
    s.push_str(&details);
    (s, passed, failed)
}

fn deviation(sim: u64, measured: u64) -> f64 {
    (sim as f64 - measured as f64) / measured as f64 * 100.0
}

/// Per-word slope between two sizes.
fn slope(results: &[SizeResult], a: u32, b: u32, pick: fn(&SizeResult) -> u64) -> Option<f64> {
    let find = |n| results.iter().find(|r| r.scalar.size == n).map(pick);
    Some((find(b)? as f64 - find(a)? as f64) / f64::from(b - a))
}

/// Simulated vs measured, with explanations for deviations beyond the tolerance.
pub fn render_calibration(results: &[SizeResult]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "calibration: simulated vs seed hardware (both include the timing wrapper)"
    );
    use crate::report::text_table::{Align, TextTable};
    let mut table = TextTable::new(&[
        ("size", Align::Right),
        ("patcher", Align::Right),
        ("simulated", Align::Right),
        ("measured", Align::Right),
        ("deviation", Align::Right),
        ("", Align::Left),
    ]);
    let mut worst_worker: f64 = 0.0;
    let mut worst_scalar: f64 = 0.0;
    for (n, scalar_hw, worker_hw) in SEED_MEASURED {
        let Some(r) = results.iter().find(|r| r.scalar.size == n) else {
            continue;
        };
        for (name, sim, hw) in [
            ("scalar", r.scalar.cycles, scalar_hw),
            ("worker", r.workers.cycles, worker_hw),
        ] {
            let d = deviation(sim, hw);
            if name == "scalar" {
                worst_scalar = worst_scalar.max(d.abs());
            } else {
                worst_worker = worst_worker.max(d.abs());
            }
            let flag = if d.abs() > CALIBRATION_TOLERANCE_PERCENT {
                "  (> 15%, see below)"
            } else {
                ""
            };
            table.row(vec![
                n.to_string(),
                name.to_string(),
                sim.to_string(),
                hw.to_string(),
                format!("{d:+.1}%"),
                flag.trim_start().to_string(),
            ]);
        }
    }
    s.push_str(&table.render(0));
    let scalar_slope = slope(results, 78, 1024, |r| r.scalar.cycles);
    let worker_slope = slope(results, 78, 1024, |r| r.workers.cycles);
    if let (Some(ss), Some(ws)) = (scalar_slope, worker_slope) {
        let _ = writeln!(
            s,
            "per-word slope 78->1024: scalar {ss:.2} simulated vs {:.2} measured; workers {ws:.2} simulated vs {:.2} measured",
            (31848.0 - 2520.0) / 946.0,
            (9468.0 - 936.0) / 946.0
        );
    }
    if worst_scalar > CALIBRATION_TOLERANCE_PERCENT {
        wrap_into(
            &mut s,
            "note: the scalar path deviates by more than 15%. Its loop is five supervisor instructions per word, \
             which the six-cycle issue model prices at 30 cycles per word; a larger gap means the wrapper or \
             loop differs from the seed's and is reported, not tuned."
        );
    }
    if worst_worker > CALIBRATION_TOLERANCE_PERCENT {
        wrap_into(
            &mut s,
            "note: the worker path deviates by more than 15%, not tuned away. The model is issue-bound: six \
             workers each issue every 6 cycles, so our five-instruction worker loop costs 5 cycles per word \
             of the list, while the seed measured about 9.0 cycles per word. Either the seed's worker loop \
             executes about nine instructions per word (its text is not in our facts), or worker memory \
             accesses stall on hardware in a way the public material does not describe (e.g. SRAM element \
             conflicts between the six workers' loads, the row stores and instruction fetch, facts §2.10). \
             The scalar path, which has no such contention, agrees within a few percent."
        );
    }
    s
}

/// Append `text` wrapped at 78 columns.
fn wrap_into(out: &mut String, text: &str) {
    let mut line = String::new();
    for w in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + w.len() > 78 {
            out.push_str(&line);
            out.push('\n');
            line = String::from("  ");
        }
        if !line.is_empty() && line != "  " {
            line.push(' ');
        }
        line.push_str(w);
    }
    out.push_str(&line);
    out.push('\n');
}

/// Everything `ipuc hw-check --target sim` prints, and whether all passed.
pub fn report(sizes: &[u32], rt: &RuntimeSource) -> Result<(String, usize, usize)> {
    let results = run_sizes(sizes, rt)?;
    let (mut out, passed, failed) = render_table(&results);
    out.push('\n');
    out.push_str(&render_calibration(&results));
    let _ = writeln!(out, "hw-check: {passed} passed, {failed} failed");
    Ok((out, passed, failed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_lists_are_sparse_unique_and_guarded() {
        let l = PatchList::generate(78);
        assert_eq!(l.offsets.len(), 78);
        let mut sorted = l.offsets.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 78, "unique destinations");
        assert!(
            sorted.iter().all(|o| (o / 4) % 2 == 1),
            "odd words: guards on both sides"
        );
        assert!(sorted.last().is_some_and(|&o| o / 4 < l.row_words - 1));
        assert_ne!(l.offsets, sorted, "list order is shuffled");
    }

    #[test]
    fn both_patchers_pass_around_the_dispatch_threshold() {
        let results = run_sizes(&[0, 7, 24, 25], &RuntimeSource::builtin()).unwrap();
        for r in &results {
            assert!(
                r.scalar.passed(),
                "scalar {}: {:?}",
                r.scalar.size,
                r.scalar.mismatches
            );
            assert!(
                r.workers.passed(),
                "workers {}: {:?}",
                r.workers.size,
                r.workers.mismatches
            );
        }
        // Scalar cost grows by one loop iteration (30 cycles) per word.
        assert_eq!(results[3].scalar.cycles - results[2].scalar.cycles, 30);
        let (text, passed, failed) = render_table(&results);
        assert_eq!((passed, failed), (8, 0));
        assert!(text.contains("    24"));
    }

    /// Change one instruction of the linked runtime in the tile's SRAM.
    fn patch_instruction(tile: &mut Tile, n: u32, patcher: Patcher, text: &str, replacement: &str) {
        let image = link_image(n, patcher, &RuntimeSource::builtin()).unwrap();
        let line = image
            .listing
            .iter()
            .find(|l| l.text == text)
            .expect("instruction in listing");
        let word = ipuc_core::asm::assemble_words(replacement, line.address).unwrap()[0];
        tile.memory_mut().write_u32(line.address, word).unwrap();
    }

    #[test]
    fn a_wrong_worker_stride_is_caught() {
        let r = run_case_with(30, Patcher::Workers, &RuntimeSource::builtin(), |t| {
            patch_instruction(
                t,
                30,
                Patcher::Workers,
                "add $m0, $m0, 24",
                "add $m0, $m0, 20",
            )
        })
        .unwrap();
        assert!(!r.passed());
        assert!(r
            .mismatches
            .iter()
            .all(|m| (ROW..ROW + 4 * 136).contains(&m.addr)));
    }

    #[test]
    fn a_stray_store_anywhere_is_caught() {
        // Scalar loop storing one word too far: destinations stay old and
        // their guard neighbours change.
        let r = run_case_with(7, Patcher::Scalar, &RuntimeSource::builtin(), |t| {
            patch_instruction(
                t,
                7,
                Patcher::Scalar,
                "st32 $m8, $m2, $m7, 0",
                "st32 $m8, $m2, $m7, 1",
            )
        })
        .unwrap();
        assert_eq!(
            r.mismatch_count, 14,
            "7 unpatched words + 7 clobbered guards"
        );
    }

    #[test]
    fn calibration_report_flags_large_deviations() {
        let results = run_sizes(&[24, 78, 1024], &RuntimeSource::builtin()).unwrap();
        let text = render_calibration(&results);
        assert!(text.contains("  24   scalar        "), "{text}");
        assert!(text.contains("measured"));
        // The scalar path is within the tolerance; the text explains any worker gap.
        for (n, hw, _) in SEED_MEASURED {
            let r = results.iter().find(|r| r.scalar.size == n).unwrap();
            assert!(deviation(r.scalar.cycles, hw).abs() < CALIBRATION_TOLERANCE_PERCENT);
        }
        let worker_off = SEED_MEASURED.iter().any(|&(n, _, hw)| {
            let r = results.iter().find(|r| r.scalar.size == n).unwrap();
            deviation(r.workers.cycles, hw).abs() > CALIBRATION_TOLERANCE_PERCENT
        });
        assert_eq!(worker_off, text.contains("note: the worker path"));
    }
}
