//! Reports from synthetic data: a BSP-shaped multi-tile profile with a
//! Repeat, and a memory map with one tile over budget.

use std::path::{Path, PathBuf};

use super::*;

/// Deterministic generator for synthetic cycle counts (xoshiro256++ from
/// `rand_xoshiro`).
struct Rng(rand_xoshiro::Xoshiro256PlusPlus);
impl Rng {
    fn new(seed: u64) -> Self {
        Rng(rand_core::SeedableRng::seed_from_u64(seed))
    }
    fn next(&mut self) -> u64 {
        rand_core::RngCore::next_u64(&mut self.0)
    }
    fn jitter(&mut self, base: u64, percent: u64) -> u64 {
        base + self.next() % (base * percent / 100 + 1)
    }
}

/// Builds a BSP profile superstep by superstep.
struct SyntheticRun {
    rng: Rng,
    steps: Vec<ProfileStep>,
    samples: Vec<Vec<CycleSample>>,
    now: u64,
}

impl SyntheticRun {
    fn step(&mut self, kind: StepKind, op: &str, iteration: Option<u32>) -> u32 {
        self.steps.push(ProfileStep {
            kind,
            operation: op.to_string(),
            iteration,
            summed: false,
        });
        self.steps.len() as u32 - 1
    }

    /// Compute (tile-dependent length), sync (waiting for the slowest tile
    /// plus a fixed barrier cost), then an optional exchange.
    fn superstep(&mut self, op: &str, compute: u64, exchange: u64, iteration: Option<u32>) {
        let c = self.step(StepKind::Compute, op, iteration);
        let s = self.step(StepKind::Sync, op, iteration);
        let tiles = self.samples.len();
        let ends: Vec<u64> = (0..tiles)
            .map(|t| {
                // Tiles in the first quarter hold more of the tensor.
                let load = if t < tiles / 4 {
                    compute * 3 / 2
                } else {
                    compute
                };
                self.now + self.rng.jitter(load, 20)
            })
            .collect();
        let barrier = ends.iter().copied().max().unwrap_or(self.now) + 60;
        for (t, &end) in ends.iter().enumerate() {
            self.samples[t].push(CycleSample {
                step: c,
                start_cycle: self.now,
                end_cycle: end,
            });
            self.samples[t].push(CycleSample {
                step: s,
                start_cycle: end,
                end_cycle: barrier,
            });
        }
        self.now = barrier;
        if exchange > 0 {
            self.uniform(StepKind::Exchange, op, exchange, iteration);
        }
    }

    /// A step taking the same time on every tile.
    fn uniform(&mut self, kind: StepKind, op: &str, cycles: u64, iteration: Option<u32>) {
        let x = self.step(kind, op, iteration);
        let now = self.now;
        for s in &mut self.samples {
            s.push(CycleSample {
                step: x,
                start_cycle: now,
                end_cycle: now + cycles,
            });
        }
        self.now += cycles;
    }
}

/// A BSP profile of a SigLIP-like run: bookends once, the encoder body
/// repeated `iterations` times, each iteration starting with a patch step.
pub(crate) fn synthetic_profile(tiles: u32, iterations: u32) -> Profile {
    let mut run = SyntheticRun {
        rng: Rng::new(0x9e37_79b9_7f4a_7c15),
        steps: Vec::new(),
        samples: vec![Vec::new(); tiles as usize],
        now: 1_000,
    };
    run.superstep("patch-embed", 40_000, 6_000, None);
    run.superstep("pos-add", 3_000, 0, None);
    for it in 0..iterations {
        run.uniform(StepKind::Patch, "repeat.patch", 900, Some(it));
        run.superstep("layer.ln1", 4_000, 2_500, Some(it));
        run.superstep("layer.qkv", 30_000, 9_000, Some(it));
        run.superstep("layer.attention", 45_000, 7_000, Some(it));
        run.superstep("layer.out-proj", 12_000, 4_000, Some(it));
        run.superstep("layer.mlp", 60_000, 8_000, Some(it));
    }
    run.superstep("final-ln", 4_000, 3_000, None);
    run.superstep("map-head", 20_000, 0, None);
    Profile {
        title: "synthetic siglip-small profile".into(),
        simulated: true,
        clock_hz: 1_500_000_000,
        steps: run.steps,
        tiles: run
            .samples
            .into_iter()
            .enumerate()
            .map(|(t, samples)| TileSamples {
                tile: t as u32 * 2,
                samples,
            })
            .collect(),
        kernels: Vec::new(),
    }
}

/// The rejection at the peak of `map`'s tile 0, for QKV (op 4).
pub(crate) fn synthetic_rejection(map: &MemoryMap) -> MemoryRejection {
    MemoryRejection::at_peak(
        "layer.qkv (op 4)",
        &map.tiles[0],
        &map.moments,
        MemoryBudget::IPU21,
    )
}

/// A memory map: code/tables always live, per-layer weights, activations
/// with staggered liveness; tile 0 holds an oversized QKV weight block.
pub(crate) fn synthetic_memory_map(tiles: u32) -> MemoryMap {
    let moments: Vec<String> = [
        "load",
        "patch-embed",
        "ln1",
        "qkv",
        "attention",
        "out-proj",
        "mlp-up",
        "mlp-down",
        "final-ln",
        "map-head",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let last = moments.len() as u32 - 1;
    let mut rng = Rng::new(42);
    let tiles = (0..tiles)
        .map(|t| {
            let mut a = Vec::new();
            let mut add = |name: &str, class, address: u32, size: u64, first, last| {
                a.push(Allocation {
                    name: name.to_string(),
                    class,
                    address: Some(address),
                    size,
                    live: Liveness { first, last },
                })
            };
            add("runtime", AllocationClass::Code, 0x4C010, 0x3FF0, 0, last);
            add(
                "host window",
                AllocationClass::HostDescriptors,
                0x50000,
                0x8000,
                0,
                last,
            );
            add(
                "exchange rows",
                AllocationClass::ExchangeTable,
                0x5C000,
                0x6000 + (t as u64 % 7) * 0x400,
                0,
                last,
            );
            add(
                "supervisor program",
                AllocationClass::Code,
                0x64000,
                0x4000,
                0,
                last,
            );
            let qkv = if t == 0 {
                0x34000
            } else {
                0x20000 + rng.next() % 0x8000
            };
            add("w.qkv", AllocationClass::Weight, 0x80000, qkv, 0, last);
            add("w.mlp", AllocationClass::Weight, 0x68000, 0x18000, 0, last);
            let act = 0x80000 + qkv as u32;
            add(
                "x (residual)",
                AllocationClass::Activation,
                act,
                0x6000,
                1,
                last,
            );
            add(
                "ln1 out",
                AllocationClass::Activation,
                act + 0x6000,
                0x6000,
                2,
                3,
            );
            add(
                "qkv out",
                AllocationClass::Activation,
                act + 0xC000,
                0x12000,
                3,
                4,
            );
            add(
                "attention scratch",
                AllocationClass::Scratch,
                act + 0x6000,
                0x6000,
                4,
                4,
            );
            add(
                "attention out",
                AllocationClass::Activation,
                act + 0x1E000,
                0x6000,
                4,
                5,
            );
            add(
                "mlp hidden",
                AllocationClass::Activation,
                act + 0x6000,
                0x18000,
                6,
                7,
            );
            add(
                "head scratch",
                AllocationClass::Scratch,
                act + 0x6000,
                0x2000,
                9,
                9,
            );
            TileMemoryMap {
                tile: t * 2,
                allocations: a,
            }
        })
        .collect();
    MemoryMap {
        title: "synthetic memory map".into(),
        budget: MemoryBudget::IPU21,
        moments,
        tiles,
        unused_tiles: Vec::new(),
    }
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ipuc-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Embedded JSON payload of a generated page.
fn embedded(html: &str) -> serde_json::Value {
    let start = html
        .find(r#"<script type="application/json" id="data">"#)
        .expect("data element")
        + 42;
    let end = start + html[start..].find("</script>").expect("closed");
    serde_json::from_str(&html[start..end]).expect("embedded data is JSON")
}

fn assert_standalone(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    for external in ["src=\"http", "href=\"http", "src='http", "@import", "<link"] {
        assert!(!html.contains(external), "external resource `{external}`");
    }
}

#[test]
fn profile_files_carry_the_data() {
    let profile = synthetic_profile(48, 4);
    profile.validate().unwrap();
    let dir = scratch_dir("profile");
    let files = write_profile(&dir, &profile, ProfileDetail::Auto).unwrap();
    assert_eq!(files.profile_html, dir.join("profile.html"));

    let back: Profile =
        serde_json::from_slice(&std::fs::read(&files.profile_json).unwrap()).unwrap();
    assert_eq!(back, profile);

    let html = std::fs::read_to_string(&files.profile_html).unwrap();
    assert_standalone(&html);
    let data = embedded(&html);
    assert_eq!(data["tiles"].as_array().unwrap().len(), 48);
    assert_eq!(data["iterations"].as_array().unwrap().len(), 4);
    assert_eq!(data["steps"].as_array().unwrap().len(), profile.steps.len());
    let ops: Vec<&str> = data["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(ops.contains(&"layer.qkv") && ops.contains(&"repeat.patch"));
    // Decoding tile 0's delta-encoded samples gives back the profile.
    let flat: Vec<i64> = data["samples"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let (mut step, mut end) = (0i64, data["span"][0].as_i64().unwrap());
    for (k, s) in profile.tiles[0].samples.iter().enumerate() {
        step += flat[3 * k];
        let start = end + flat[3 * k + 1];
        end = start + flat[3 * k + 2];
        assert_eq!(
            (step as u32, start as u64, end as u64),
            (s.step, s.start_cycle, s.end_cycle)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn operation_summaries_add_up() {
    let profile = synthetic_profile(8, 3);
    let ops = summarize(&profile);
    let patch = ops.iter().find(|o| o.operation == "repeat.patch").unwrap();
    assert_eq!(
        (patch.count, patch.min_cycles, patch.max_cycles),
        (8 * 3, 900, 900)
    );
    assert_eq!(
        (patch.total_cycles, patch.wall_cycles, patch.tiles),
        (8 * 3 * 900, 3 * 900, 8)
    );
    let total: u64 = ops.iter().map(|o| o.total_cycles).sum();
    let samples: u64 = profile
        .tiles
        .iter()
        .flat_map(|t| &t.samples)
        .map(CycleSample::cycles)
        .sum();
    assert_eq!(total, samples);
    // Supersteps tile the span exactly, so wall cycles sum to it.
    assert_eq!(
        ops.iter().map(|o| o.wall_cycles).sum::<u64>(),
        profile.span_cycles()
    );
    assert!(ops.windows(2).all(|w| w[0].wall_cycles >= w[1].wall_cycles));
}

#[test]
fn iteration_spans_follow_the_repeat() {
    let profile = synthetic_profile(4, 3);
    let spans = profile.iteration_spans();
    assert_eq!(
        spans.iter().map(|s| s.iteration).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert!(spans.windows(2).all(|w| w[0].end_cycle <= w[1].start_cycle));
}

/// Issue #27 item 5: a summarized profile keeps the first Repeat iteration
/// in detail and every later one apart: on every tile, iteration k is its
/// own summed samples, one per step kind, each lasting exactly as long as
/// that tile's steps of that kind in iteration k, laid end to end from the
/// tile's first start in it; steps outside the Repeat are kept; every
/// iteration's compute/exchange/sync/patch split is the full profile's.
#[test]
fn summarized_profiles_keep_every_iteration_apart() {
    let full = synthetic_profile(16, 27);
    let short = full.with_iteration_summaries().unwrap();
    short.validate().unwrap();
    assert!(short.is_summarized() && !full.is_summarized());
    assert_eq!(short.iteration_kind_cycles(), full.iteration_kind_cycles());
    assert_eq!(short.iteration_spans().len(), 27);
    assert_eq!(short.span(), full.span(), "the cropped span is unchanged");
    let kept = full
        .steps
        .iter()
        .filter(|s| s.iteration.unwrap_or(0) == 0)
        .count();
    let kinds_used = StepKind::ALL
        .iter()
        .filter(|k| full.steps.iter().any(|s| s.kind == **k))
        .count();
    assert_eq!(short.steps.len(), kept + 26 * StepKind::ALL.len());
    for (f, t) in full.tiles.iter().zip(&short.tiles) {
        for it in 1..27u32 {
            let own: Vec<&CycleSample> = f
                .samples
                .iter()
                .filter(|x| full.steps[x.step as usize].iteration == Some(it))
                .collect();
            let summed: Vec<&CycleSample> = t
                .samples
                .iter()
                .filter(|x| short.steps[x.step as usize].iteration == Some(it))
                .collect();
            assert_eq!(summed.len(), kinds_used, "tile {} iteration {it}", t.tile);
            assert_eq!(
                summed[0].start_cycle,
                own.iter().map(|x| x.start_cycle).min().unwrap()
            );
            assert!(
                summed.last().unwrap().end_cycle <= own.iter().map(|x| x.end_cycle).max().unwrap()
            );
            for w in summed.windows(2) {
                assert_eq!(w[0].end_cycle, w[1].start_cycle, "laid end to end");
            }
            for x in &summed {
                let step = &short.steps[x.step as usize];
                assert!(step.summed);
                let expected: u64 = own
                    .iter()
                    .filter(|o| full.steps[o.step as usize].kind == step.kind)
                    .map(|o| o.cycles())
                    .sum();
                assert_eq!(
                    x.cycles(),
                    expected,
                    "{} on tile {}",
                    step.operation,
                    t.tile
                );
            }
        }
    }
    // The page draws every iteration with its own split, and the op lane
    // one block per summarized iteration.
    let html = super::profile_html::render(&short).unwrap();
    let data = embedded(&html);
    assert_eq!(data["summarized"], true);
    let iterations = data["iterations"].as_array().unwrap();
    assert_eq!(iterations.len(), 27);
    for (row, (it, k)) in iterations.iter().zip(full.iteration_kind_cycles()) {
        assert_eq!(row[0], it);
        for i in 0..4 {
            assert_eq!(row[3 + i], k[i]);
        }
    }
    let lane = data["lane"].as_array().unwrap();
    for it in 1..27i64 {
        assert_eq!(
            lane.iter().filter(|b| b[0] == -1 - it).count(),
            1,
            "iteration {it}"
        );
    }
    assert!(lane
        .windows(2)
        .all(|w| w[0][1].as_i64() <= w[1][1].as_i64()));
    assert!(synthetic_profile(4, 1).with_iteration_summaries().is_none());
}

/// Which profiles are summarized: `auto` above `DETAILED_SAMPLES` only
/// (tested on a profile above it), `summary` always, `full` never.
#[test]
fn profile_detail_decides_what_is_summarized() {
    use super::profile::DETAILED_SAMPLES;
    let small = synthetic_profile(8, 4);
    assert!(small.sample_count() < DETAILED_SAMPLES);
    assert!(!small.for_writing(ProfileDetail::Auto).is_summarized());
    assert!(small.for_writing(ProfileDetail::Summary).is_summarized());
    let big = synthetic_profile(512, 140);
    assert!(
        big.sample_count() > DETAILED_SAMPLES,
        "{}",
        big.sample_count()
    );
    let auto = big.for_writing(ProfileDetail::Auto);
    assert!(auto.is_summarized());
    assert_eq!(auto.iteration_spans().len(), 140, "iterations stay apart");
    assert!(auto.sample_count() < DETAILED_SAMPLES);
    assert_eq!(
        big.for_writing(ProfileDetail::Full).sample_count(),
        big.sample_count()
    );
}

/// The Perfetto trace: Trace Event Format JSON whose complete events never
/// overlap on one thread (Perfetto refuses overlapping slices), one named
/// thread per tile, the iterations on their own track, exact cycles in
/// `args`, and the schema in `otherData`.
#[test]
fn perfetto_trace_is_valid_trace_event_json() {
    let profile = synthetic_profile(8, 5).with_iteration_summaries().unwrap();
    let trace: serde_json::Value =
        serde_json::from_str(&super::perfetto::render(&profile)).unwrap();
    assert_eq!(trace["otherData"]["schema"], "ipuc.trace");
    assert_eq!(trace["otherData"]["summarized"], true);
    // Older Perfetto importers take `displayTimeUnit: "ns"` as the unit of
    // `ts`: the trace must not carry one (its times are microseconds).
    assert!(trace.get("displayTimeUnit").is_none());
    let events = trace["traceEvents"].as_array().unwrap();
    let mut tracks: std::collections::BTreeMap<(u64, u64), Vec<(u64, u64)>> = Default::default();
    let ns = |v: &serde_json::Value| (v.as_f64().unwrap() * 1000.0).round() as u64;
    let mut cycles = 0;
    let mut thread_names = 0;
    for e in events {
        match e["ph"].as_str().unwrap() {
            "X" => {
                let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
                tracks
                    .entry(key)
                    .or_default()
                    .push((ns(&e["ts"]), ns(&e["dur"])));
                assert!(e["name"].as_str().is_some_and(|n| !n.is_empty()));
                if key.0 == 1 {
                    cycles += e["args"]["cycles"].as_u64().unwrap();
                }
            }
            "M" => {
                if e["name"] == "thread_name" && e["pid"] == 1 {
                    thread_names += 1;
                }
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    assert_eq!(thread_names, 8);
    assert_eq!(tracks.keys().filter(|k| k.0 == 1).count(), 8);
    assert_eq!(
        cycles,
        profile
            .tiles
            .iter()
            .flat_map(|t| &t.samples)
            .map(CycleSample::cycles)
            .sum::<u64>()
    );
    for (key, mut slices) in tracks {
        slices.sort();
        for w in slices.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "track {key:?} overlaps: {w:?}");
        }
    }
    let iterations = events
        .iter()
        .filter(|e| e["pid"] == 2 && e["ph"] == "X")
        .count();
    assert_eq!(iterations, 5);
}

/// The template-rendered profile page: escaped title, the header's
/// formatted figures, every control and canvas the script needs, the
/// cycle-source and kernel tables (simulated profiles only), the data and
/// the script last.
#[test]
fn templated_profile_page_has_its_elements() {
    let mut p = synthetic_profile(8, 2);
    p.title = "small <2 layers> & co".into();
    p.kernels = vec![KernelKindTiming {
        kernel: "gemm_amp".into(),
        calls: 5256,
        planned_cycles: 3_431_430,
        simulated_cycles: 3_526_614,
    }];
    let html = profile_html::render(&p).unwrap();
    assert_standalone(&html);
    assert!(
        html.ends_with("</body>\n</html>\n"),
        "{}",
        &html[html.len() - 40..]
    );
    assert!(html.contains("<title>small &lt;2 layers&gt; &amp; co</title>"));
    assert!(html.contains(
        "<h1>small &lt;2 layers&gt; &amp; co<span class=\"badge\">simulated</span></h1>"
    ));
    let (start, end) = p.span().unwrap();
    assert!(html.contains(&format!(
        "span <b>{}</b> cycles = <b>{:.6} ms</b> at 1.5 GHz (simulated)",
        html::thousands(end - start),
        p.millis(end - start)
    )));
    assert!(html.contains("<span><b>8</b> tiles <span class=\"muted\">(rows by logical id"));
    for id in [
        "legend", "group", "zin", "zout", "reset", "wrap", "chart", "tip", "ops", "iterstat",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "missing #{id}");
    }
    assert!(html.contains("<h2>Where the cycles come from</h2>"));
    // Its prose wraps (`table.prose`: `white-space: normal`), where every
    // other table keeps its cells on one line.
    assert!(html.contains("<table class=\"prose\">"));
    assert!(html.contains("table.prose td { white-space: normal;"));
    for (part, _) in super::profile::CYCLE_SOURCES {
        assert!(
            html.contains(&format!(
                "<tr><td class=\"l\">{}</td>",
                html::escape(part).replace('\'', "&#x27;")
            )),
            "{part}"
        );
    }
    assert!(html.contains(
        "<tr><td>gemm_amp</td><td>5,256</td><td>3,431,430</td><td>3,526,614</td><td>-2.7%</td></tr>"
    ));
    let data_at = html.find("id=\"data\"").unwrap();
    assert!(
        data_at < html.rfind("<script>").unwrap(),
        "data before the script"
    );
    // Rows by logical id, each with its physical id (what the samples carry).
    let data = embedded(&html);
    let (logical, physical) = (
        data["tiles"].as_array().unwrap(),
        data["physical"].as_array().unwrap(),
    );
    assert_eq!((logical.len(), physical.len()), (8, 8));
    for (l, ph) in logical.iter().zip(physical) {
        let ph =
            ipuc_target::ipu21::topology::PhysicalTile::new(ph.as_u64().unwrap() as u32).unwrap();
        assert_eq!(l.as_u64().unwrap(), u64::from(ph.logical().get()));
    }
    assert!(
        logical.windows(2).all(|w| w[0].as_u64() < w[1].as_u64()),
        "logical order"
    );
    // A measured profile has neither table.
    p.simulated = false;
    p.kernels.clear();
    let html = profile_html::render(&p).unwrap();
    assert!(html.contains("<span class=\"badge\">measured</span>"));
    assert!(!html.contains("Where the cycles come from") && !html.contains("Kernel timing"));
}

/// The template-rendered memory map: escaped title and every control and
/// canvas memory.js draws into, the data before the script.
#[test]
fn templated_memory_page_has_its_elements() {
    let mut map = synthetic_memory_map(4);
    map.title = "memory <of> \"small\"".into();
    let html = memory_html::render_memory_map(&map).unwrap();
    assert_standalone(&html);
    assert!(html.contains("<title>memory &lt;of&gt; &quot;small&quot;</title>"));
    for id in [
        "verdict",
        "stats",
        "tile",
        "prev",
        "next",
        "peak",
        "peakmoment",
        "reuse",
        "mode",
        "legend",
        "alltitle",
        "tiles",
        "overview",
        "maptitle",
        "map",
        "livetitle",
        "live",
        "tip",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "missing #{id}");
    }
    assert!(html.contains("<input type=\"checkbox\" id=\"reuse\" checked> Reused allocations"));
    assert!(html.find("id=\"data\"").unwrap() < html.rfind("<script>").unwrap());
    let data = embedded(&html);
    assert_eq!(data["tiles"].as_array().unwrap().len(), 4);
    // Logical ids, with the physical id of every one of the 1472 tiles.
    let phys = data["phys"].as_array().unwrap();
    assert_eq!(phys.len(), 1472);
    assert_eq!(
        phys[1],
        u32::from(
            ipuc_target::ipu21::topology::LogicalTile::new(1)
                .unwrap()
                .physical()
                .get()
        )
    );
    assert!(html.contains("Tile numbers are logical"));
    assert!(html.ends_with("</html>\n"));
}

#[test]
fn memory_map_marks_the_peak_tile() {
    let map = synthetic_memory_map(32);
    let peak = map.peak_tile().unwrap();
    assert_eq!(peak.tile, 0);
    assert_eq!(map.moments[peak.moment as usize], "attention");
    let dir = scratch_dir("memory");
    let path = dir.join("memory.html");
    write_memory_map(&path, &map).unwrap();
    let html = std::fs::read_to_string(&path).unwrap();
    assert_standalone(&html);
    let data = embedded(&html);
    assert_eq!(data["tiles"].as_array().unwrap().len(), 32);
    assert_eq!(data["peaks"][0][0].as_u64().unwrap(), peak.live_bytes);
    assert!(data["names"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n == "w.qkv"));
    let back: MemoryMap =
        serde_json::from_slice(&std::fs::read(path.with_extension("json")).unwrap()).unwrap();
    assert_eq!(back, map);
    // The picture beside it: a valid PNG of the documented size.
    let png = image::open(path.with_extension("png")).unwrap().to_rgb8();
    assert_eq!(png.dimensions(), super::memory_png::size(&map));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn memory_png_covers_every_tile_and_marks_unused_ones() {
    let mut map = synthetic_memory_map(8);
    // Tiles 0, 2, …, 14 are used; 1, 3, … and 16..1472 are not.
    let used: Vec<u32> = map.tiles.iter().map(|t| t.tile).collect();
    map.unused_tiles = (0..1472).filter(|t| !used.contains(t)).collect();
    let png = image::load_from_memory(&super::memory_png::render(&map).unwrap())
        .unwrap()
        .to_rgb8();
    let (w, h) = super::memory_png::size(&map);
    assert_eq!(png.dimensions(), (w, h));
    // Few tiles: one row of wide, labelled columns (16 tiles of 48 pixels,
    // then one gap column for tiles 16..1471) in a tall band.
    assert_eq!(h, 58 + (300 + 14 + 30) + 44, "one tall row");
    // Column of tile k: x = 64 + 48k; a pixel in the band's middle.
    let at = |x: u32| png.get_pixel(x, 58 + 150).0;
    let tile = |k: u32| at(64 + 48 * k + 24);
    assert_eq!(tile(1), [0xe4, 0xe7, 0xeb], "tile 1 is unused (grey)");
    assert_ne!(tile(0), tile(1), "tile 0 holds data");
    assert_eq!(
        at(64 + 48 * 16 + 8),
        [0xee, 0xf0, 0xf3],
        "tiles 16..1471 are one gap column"
    );
    // Every tile used: four rows of 368 four-pixel columns.
    let all = synthetic_memory_map(1472);
    assert_eq!(
        super::memory_png::size(&all),
        (64 + 1472 + 16, 58 + 4 * (150 + 30) + 44)
    );
}

#[test]
fn profile_output_names_a_file_or_a_directory() {
    let f = ProfileFiles::at(Path::new("out/model.ipuprof"));
    assert_eq!(f.profile_json, Path::new("out/model.ipuprof"));
    assert_eq!(f.profile_html, Path::new("out/model.html"));
    assert_eq!(f.operations_json, Path::new("out/model.operations.json"));
    assert_eq!(f.trace_json, Path::new("out/model.trace.json.gz"));
    assert_eq!(f.index_html, Path::new("out/model.index.html"));
    assert_eq!(f.patch_audit, Path::new("out/model.patch-audit.txt"));
    // Two names in one directory share no file.
    let g = ProfileFiles::at(Path::new("out/other.ipuprof"));
    for p in f.all() {
        assert!(!g.all().contains(&p), "{} is shared", p.display());
    }
    let d = ProfileFiles::at(Path::new("out"));
    assert_eq!(d.profile_json, Path::new("out/profile.json"));
    assert_eq!(d.profile_html, Path::new("out/profile.html"));
    assert_eq!(d.trace_json, Path::new("out/trace.json.gz"));
    assert_eq!(d.index_html, Path::new("out/index.html"));
}

#[test]
fn index_links_every_artifact_relative_to_its_directory() {
    let dir = scratch_dir("index");
    std::fs::create_dir_all(dir.join("memory")).unwrap();
    std::fs::write(dir.join("profile.html"), "x").unwrap();
    std::fs::write(dir.join("memory/memory.png"), "xy").unwrap();
    let artifacts = [
        super::index::Artifact {
            path: dir.join("profile.html"),
            what: "timeline <per tile>".into(),
        },
        super::index::Artifact {
            path: dir.join("memory/memory.png"),
            what: "overview".into(),
        },
    ];
    let path = super::index::write(
        "ipuc run siglip-small",
        &[("validation".into(), "PASS".into())],
        &dir.join("index.html"),
        &artifacts,
    )
    .unwrap();
    let html = std::fs::read_to_string(path).unwrap();
    assert_standalone(&html);
    assert!(html.contains(r#"<a href="profile.html">"#), "{html}");
    // minijinja's HTML escaping writes `/` as `&#x2f;` (the browser reads
    // the same URL).
    assert!(
        html.contains(r#"<a href="memory&#x2f;memory.png">"#),
        "{html}"
    );
    assert!(html.contains("timeline &lt;per tile&gt;"), "escaped");
    assert!(html.contains("\"Segoe UI\""), "CSS not escaped");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The hrefs of `<a href="…">` in `html`, minijinja's `&#x2f;` read as `/`.
fn hrefs(html: &str) -> Vec<String> {
    html.split("<a href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|h| h.replace("&#x2f;", "/"))
        .collect()
}

/// A URL path's percent escapes decoded (ASCII names only, as in the test).
fn url_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// Files outside the index's directory are linked relative too (`../`),
/// names are URL-encoded (a space, `#`, `%`), and the links still resolve
/// after the folder holding the run is moved.
#[test]
fn index_links_are_relative_and_url_encoded_and_survive_a_move() {
    let root = scratch_dir("index-move");
    let run = root.join("runs/a run #1");
    std::fs::create_dir_all(run.join("profile")).unwrap();
    std::fs::create_dir_all(run.join("mem 100%")).unwrap();
    let files = [
        run.join("profile/profile.html"),
        run.join("mem 100%/memory.html"),
        run.join("model?.ipuc"),
    ];
    for f in &files {
        std::fs::write(f, "x").unwrap();
    }
    let artifacts: Vec<_> = files
        .iter()
        .map(|f| super::index::Artifact {
            path: f.clone(),
            what: "a file".into(),
        })
        .collect();
    let index = run.join("profile/index.html");
    super::index::write("ipuc run", &[], &index, &artifacts).unwrap();
    let html = std::fs::read_to_string(&index).unwrap();
    let links = hrefs(&html);
    assert_eq!(
        links,
        [
            "profile.html",
            "../mem%20100%25/memory.html",
            "../model%3F.ipuc"
        ],
        "{html}"
    );
    assert!(!html.contains("file:"), "{html}");
    // Move the whole run elsewhere: every link still names a file.
    let moved = root.join("elsewhere/b");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&run, &moved).unwrap();
    for l in &links {
        let target = moved.join("profile").join(url_decode(l));
        assert!(target.is_file(), "{l} -> {}", target.display());
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn rejection_report_names_op_tile_moment_and_excess() {
    let map = synthetic_memory_map(4);
    let rejection = synthetic_rejection(&map);
    assert_eq!(
        (rejection.peak_tile, rejection.peak_moment.as_str()),
        (0, "attention")
    );
    let live: u64 = rejection.live.iter().map(|a| a.bytes).sum();
    assert_eq!(rejection.effective_bytes(), live + 49_152);
    assert!(
        rejection.excess_bytes() > 0,
        "tile 0 is built to exceed 586,960 bytes"
    );
    assert_eq!(rejection.live[0].name, "w.qkv");
    let dir = scratch_dir("rejection");
    let path = dir.join("rejected-op4.html");
    write_rejection(&path, &rejection).unwrap();
    let html = std::fs::read_to_string(&path).unwrap();
    assert_standalone(&html);
    for needle in [
        "layer.qkv (op 4)",
        "reported tile <b>0 (physical ",
        "qkv out",
        "586,960",
        "49,152",
        "over budget by",
        "id=\"rtile\"",
        "id=\"timeline\"",
    ] {
        assert!(html.contains(needle), "missing `{needle}`");
    }
    // One stylesheet: the base's, from the shared template.
    assert_eq!(html.matches("<style>").count(), 1);
    assert!(html.contains(super::html::BASE_CSS.lines().next().unwrap()));
    // The picker's data: every tile with its physical id beside the logical.
    let data = embedded(&html);
    let t0 = &data["tiles"][0];
    assert_eq!(t0["tile"], 0);
    assert_eq!(
        t0["physical"],
        u32::from(
            ipuc_target::ipu21::topology::LogicalTile::new(0)
                .unwrap()
                .physical()
                .get()
        )
    );
    assert_eq!(data["moments"].as_array().unwrap().len(), map.moments.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn embedded_json_cannot_close_its_script_element() {
    let mut p = synthetic_profile(1, 1);
    p.steps[0].operation = "</script><script>alert(1)</script>".into();
    let html = profile_html::render(&p).unwrap();
    assert_eq!(
        html.matches("</script>").count(),
        2,
        "data and code elements only"
    );
    assert!(embedded(&html)["ops"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o.as_str().unwrap().starts_with("</script>")));
}

/// Writes full-size reports (1472 tiles, 27 iterations) for a visual check
/// in a browser: `IPUC_REPORT_DEMO_DIR=/tmp/r cargo test -p ipuc demo -- --ignored`
/// (`IPUC_REPORT_DEMO_ITERATIONS` sets the Repeat count, default 27).
#[test]
#[ignore = "writes large demo files for manual browser checks"]
fn demo_full_size_reports() {
    let dir = std::env::var_os("IPUC_REPORT_DEMO_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| scratch_dir("demo"));
    let iterations = std::env::var("IPUC_REPORT_DEMO_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(27);
    let profile = synthetic_profile(1472, iterations);
    write_profile(&dir, &profile, ProfileDetail::Auto).unwrap();
    let map = synthetic_memory_map(1472);
    write_memory_map(&dir.join("memory.html"), &map).unwrap();
    let rejection = synthetic_rejection(&map);
    write_rejection(&dir.join("rejected-op4.html"), &rejection).unwrap();
    eprintln!("demo reports in {}", dir.display());
}

/// A full-size profile from a real one-layer profile, for browser checks:
/// `IPUC_PROFILE=model.ipuprof IPUC_REPORT_DEMO_DIR=/tmp/r cargo test -p
/// ipuc --lib replicated -- --ignored` repeats its Repeat iteration
/// `IPUC_REPORT_DEMO_ITERATIONS` times (default 27; each copy shifted by the
/// iteration's span) and writes the profile as `write_profile` does
/// (`profile.html`: seeds' shape above `DETAILED_SAMPLES`) and in full
/// (`profile-full.html`). A measuring aid, not a simulated result.
#[test]
#[ignore = "needs IPUC_PROFILE; writes large files for manual browser checks"]
fn replicated_full_size_profile() {
    let Some(path) = std::env::var_os("IPUC_PROFILE") else {
        return;
    };
    let dir = std::env::var_os("IPUC_REPORT_DEMO_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| scratch_dir("replicated"));
    let iterations: u32 = std::env::var("IPUC_REPORT_DEMO_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(27);
    let one: Profile = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let span = one.iteration_spans()[0];
    let shift = span.cycles();
    let mut steps = Vec::new();
    let mut index = Vec::new(); // (new step of iteration 0, is body)
    let body: Vec<usize> = (0..one.steps.len())
        .filter(|&i| one.steps[i].iteration == Some(0))
        .collect();
    let first_body = body[0];
    let last_body = *body.last().unwrap();
    for (i, s) in one.steps.iter().enumerate() {
        if i == first_body {
            for it in 0..iterations {
                for &b in &body {
                    steps.push(ProfileStep {
                        iteration: Some(it),
                        ..one.steps[b].clone()
                    });
                }
            }
        }
        if s.iteration.is_none() {
            index.push((i, steps.len() as u32));
            steps.push(s.clone());
        }
    }
    let n = body.len() as u32;
    let base = index.iter().filter(|(j, _)| *j < first_body).count() as u32;
    let tiles = one
        .tiles
        .iter()
        .map(|t| {
            let mut samples = Vec::new();
            for x in &t.samples {
                let i = x.step as usize;
                if let Ok(k) = body.binary_search(&i) {
                    for it in 0..iterations {
                        let d = u64::from(it) * shift;
                        samples.push(CycleSample {
                            step: base + it * n + k as u32,
                            start_cycle: x.start_cycle + d,
                            end_cycle: x.end_cycle + d,
                        });
                    }
                } else {
                    let new = index.iter().find(|(j, _)| *j == i).unwrap().1;
                    let after = i > last_body || x.start_cycle >= span.end_cycle;
                    let d = if after {
                        u64::from(iterations - 1) * shift
                    } else {
                        0
                    };
                    samples.push(CycleSample {
                        step: new,
                        start_cycle: x.start_cycle + d,
                        end_cycle: x.end_cycle + d,
                    });
                }
            }
            samples.sort_by_key(|s| (s.start_cycle, s.step));
            TileSamples {
                tile: t.tile,
                samples,
            }
        })
        .collect();
    let profile = Profile {
        title: format!("{} (replicated ×{iterations}, not simulated)", one.title),
        steps,
        tiles,
        ..one
    };
    profile.validate().unwrap();
    write_profile(&dir, &profile, ProfileDetail::Auto).unwrap();
    std::fs::write(
        dir.join("profile-full.html"),
        super::profile_html::render(&profile).unwrap(),
    )
    .unwrap();
    eprintln!(
        "{} samples ({} written) in {}",
        profile.sample_count(),
        profile.for_writing(ProfileDetail::Auto).sample_count(),
        dir.display()
    );
}

/// Issue #13 item 8: `operations.json` says per part whether its cycles are
/// simulated from instructions or modelled, and carries the
/// planner-vs-simulated kernel table with the error.
#[test]
fn operations_json_labels_simulated_and_modelled_cycles() {
    let mut p = synthetic_profile(4, 2);
    p.kernels = vec![KernelKindTiming {
        kernel: "gemm_amp".into(),
        calls: 10,
        planned_cycles: 900,
        simulated_cycles: 1000,
    }];
    let json = serde_json::to_value(super::operations::OperationsFile::of(&p)).unwrap();
    let sources = &json["cycle_sources"];
    for part in ["supervisor code", "worker code", "exchange rows"] {
        assert!(
            sources[part].as_str().unwrap().starts_with("simulated"),
            "{part}: {json}"
        );
    }
    for part in ["kernel bodies (native codelets)", "global sync latency"] {
        assert!(
            sources[part].as_str().unwrap().starts_with("modelled"),
            "{part}: {json}"
        );
    }
    assert_eq!(json["kernel_timing"][0]["planner_error_percent"], -10.0);
}

/// Issue #27 item 6: the picker's note counts from the report itself and
/// says "all" only when the picker holds them all.
#[test]
fn rejection_picker_note_tells_how_many_of_how_many() {
    use super::memory_html::picker_note;
    let map = synthetic_memory_map(6);
    let mut r = synthetic_rejection(&map);
    r.tiles = map.tiles.clone();
    let over = r.picked_over_budget();
    // Planner: more tiles over budget than the picker holds.
    r.source = "planner estimate".into();
    r.tiles_over_budget = Some(115);
    let note = picker_note(&r);
    assert!(
        note.contains(&format!("{over} of the 115 tiles over budget")),
        "{note}"
    );
    assert!(!note.contains("all "), "{note}");
    r.tiles_over_budget = Some(over);
    let note = picker_note(&r);
    let all = if over == 1 {
        "the one tile over budget".to_string()
    } else {
        format!("all {over} tiles over budget")
    };
    assert!(note.contains(&all), "{note}");
    // Placement: 2 of 40 refused tiles held, then 4 others.
    r.source = "placement".into();
    r.refused_tiles = vec![map.tiles[0].tile, map.tiles[1].tile];
    r.refused_tiles.extend(100..138);
    let note = picker_note(&r);
    assert!(
        note.starts_with("2 of the 40 tiles placement refused"),
        "{note}"
    );
    assert!(
        note.contains("then 4 other tiles placement accepted"),
        "{note}"
    );
    r.refused_tiles.truncate(2);
    assert!(picker_note(&r).starts_with("all 2 tiles placement refused, then 4 other"));
    // The page carries the note.
    let html = super::memory_html::render_rejection(&r).unwrap();
    assert!(html.contains("the picker holds all 2 tiles placement refused"));
}
