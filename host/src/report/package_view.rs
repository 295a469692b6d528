//! What `ipuc inspect` shows about a package: a serialisable view (the
//! `--json` output) and its aligned text rendering.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use ipuc_target::package::{
    KernelSymbol, Package, SegmentFlags, SegmentRole, SummaryValue, TargetFacts, FORMAT_VERSION,
};
use serde::Serialize;

use super::text_table::{grouped, Align, TextTable};

#[derive(Clone, Debug, Serialize)]
pub struct PackageView {
    pub format_version: u16,
    pub producer: String,
    pub bytes: u64,
    pub sha256: String,
    /// The target facts and kernel symbols serialize themselves
    /// (`ipuc-target`'s `serde` feature).
    pub target: TargetFacts,
    pub tiles: Vec<TileView>,
    pub kernels: Vec<KernelSymbol>,
    pub bindings: Vec<BindingView>,
    pub host_calls: Vec<HostCallView>,
    pub steps: StepsView,
    pub plan_summary: BTreeMap<String, serde_json::Value>,
    /// What the package was compiled from (model, weights, compile flags).
    pub description: ipuc_core::description::Description,
}

#[derive(Clone, Debug, Serialize)]
pub struct TileView {
    pub tile: u32,
    pub entry_point: u32,
    /// Bytes reserved by all segments.
    pub memory_bytes: u64,
    /// Initialised bytes carried in the package.
    pub data_bytes: u64,
    /// Bytes of executable segments.
    pub code_bytes: u64,
    /// Exchange rows plus Repeat patch tables plus sharing patch lists.
    pub exchange_table_bytes: u64,
    pub host_descriptor_bytes: u64,
    pub bytes_by_role: BTreeMap<&'static str, u64>,
    pub segments: Vec<SegmentView>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SegmentView {
    pub address: u32,
    pub end: u64,
    pub memory_size: u32,
    pub data_bytes: u64,
    pub flags: String,
    pub role: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct BindingView {
    pub name: String,
    pub kind: &'static str,
    pub dtype: &'static str,
    pub shape: Vec<u64>,
    pub bytes: u64,
    pub tiles: u32,
    pub slices: Vec<SliceView>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SliceView {
    pub tile: u32,
    pub tile_address: u32,
    pub file_offset: u64,
    pub size: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct HostCallView {
    pub name: String,
    pub command: u32,
    pub phases: u32,
    pub invocations: u32,
    /// `binding[start..end]`.
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct StepsView {
    pub operations: usize,
    pub tiles: usize,
    pub steps: usize,
    /// Repeat id → (trip count, body steps on the first tile that has it).
    pub repeats: BTreeMap<u32, RepeatView>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RepeatView {
    pub trip_count: u32,
    pub body_steps: usize,
}

fn flags_text(f: SegmentFlags) -> String {
    let bit = |flag, c| if f.contains(flag) { c } else { '-' };
    [
        bit(SegmentFlags::READ, 'R'),
        bit(SegmentFlags::WRITE, 'W'),
        bit(SegmentFlags::EXECUTE, 'X'),
    ]
    .iter()
    .collect()
}

impl TileView {
    /// One tile image's figures and segments.
    fn of(tile: &ipuc_target::package::TileImage) -> Self {
        let mut by_role = BTreeMap::new();
        for s in &tile.segments {
            *by_role.entry(s.role.name()).or_insert(0) += u64::from(s.memory_size);
        }
        TileView {
            tile: tile.physical_tile,
            entry_point: tile.entry_point,
            memory_bytes: tile.memory_bytes(),
            data_bytes: tile.segments.iter().map(|s| s.data.len() as u64).sum(),
            code_bytes: tile
                .segments
                .iter()
                .filter(|s| s.flags.is_executable())
                .map(|s| u64::from(s.memory_size))
                .sum(),
            exchange_table_bytes: SegmentRole::ALL
                .iter()
                .filter(|r| r.is_exchange_table())
                .map(|r| tile.role_bytes(*r))
                .sum(),
            host_descriptor_bytes: tile.role_bytes(SegmentRole::HostDescriptors),
            bytes_by_role: by_role,
            segments: tile
                .segments
                .iter()
                .map(|s| SegmentView {
                    address: s.address,
                    end: s.end(),
                    memory_size: s.memory_size,
                    data_bytes: s.data.len() as u64,
                    flags: flags_text(s.flags),
                    role: s.role.name(),
                })
                .collect(),
        }
    }
}

impl BindingView {
    /// One binding, its slices and how many tiles they sit on.
    fn of(b: &ipuc_target::package::Binding) -> Self {
        BindingView {
            name: b.name.clone(),
            kind: b.kind.name(),
            dtype: b.dtype.name(),
            shape: b.shape.clone(),
            bytes: b.byte_size().unwrap_or(0),
            tiles: b
                .slices
                .iter()
                .map(|s| s.tile)
                .collect::<BTreeSet<_>>()
                .len() as u32,
            slices: b
                .slices
                .iter()
                .map(|s| SliceView {
                    tile: s.tile,
                    tile_address: s.tile_address,
                    file_offset: s.file_offset,
                    size: s.size,
                })
                .collect(),
        }
    }
}

/// Repeat id → its trip count and body steps on the first tile that
/// has it.
fn repeats_of(steps: &ipuc_target::package::StepTables) -> BTreeMap<u32, RepeatView> {
    let mut repeats: BTreeMap<u32, RepeatView> = BTreeMap::new();
    for table in &steps.tiles {
        let mut here: BTreeMap<u32, RepeatView> = BTreeMap::new();
        for r in table.steps.iter().filter_map(|s| s.repeat) {
            here.entry(r.repeat)
                .or_insert(RepeatView {
                    trip_count: r.trip_count,
                    body_steps: 0,
                })
                .body_steps += 1;
        }
        for (id, v) in here {
            repeats.entry(id).or_insert(v);
        }
    }
    repeats
}

impl PackageView {
    /// Builds the view of `package`, whose encoding is `bytes`.
    /// The view of `package`, its `bytes` and its description as read
    /// (`ipuc_core::description::read`).
    pub fn new(
        package: &Package,
        bytes: &[u8],
        description: ipuc_core::description::Description,
    ) -> Self {
        let tiles = package.tiles.iter().map(TileView::of).collect();
        let bindings = package.bindings.iter().map(BindingView::of).collect();
        let range = |t: &ipuc_target::package::HostTransfer| {
            format!(
                "{}[{}..{}]",
                t.binding,
                t.file_offset,
                t.file_offset + t.size
            )
        };
        let host_calls = package
            .host_calls
            .iter()
            .map(|c| HostCallView {
                name: c.name.clone(),
                command: c.command,
                phases: c.phases,
                invocations: c.invocations,
                inputs: c.inputs.iter().map(range).collect(),
                outputs: c.outputs.iter().map(range).collect(),
            })
            .collect();
        PackageView {
            format_version: FORMAT_VERSION,
            producer: package.producer.clone(),
            bytes: bytes.len() as u64,
            sha256: ipuc_target::package::digest_hex(bytes),
            target: package.target,
            tiles,
            kernels: package.kernels.clone(),
            bindings,
            host_calls,
            steps: StepsView {
                operations: package.steps.operations.len(),
                tiles: package.steps.tiles.len(),
                steps: package.steps.tiles.iter().map(|t| t.steps.len()).sum(),
                repeats: repeats_of(&package.steps),
            },
            plan_summary: package
                .plan_summary
                .iter()
                .map(|(k, v)| {
                    let json = match v {
                        SummaryValue::Text(s) => serde_json::Value::from(s.as_str()),
                        SummaryValue::Integer(i) => serde_json::Value::from(*i),
                        SummaryValue::Real(x) => serde_json::Value::from(*x),
                    };
                    (k.clone(), json)
                })
                .collect(),
            description,
        }
    }
}

impl PackageView {
    /// Largest per-tile exchange-table and host-descriptor bytes.
    pub fn max_table_bytes(&self) -> (u64, u64) {
        let max = |f: fn(&TileView) -> u64| self.tiles.iter().map(f).max().unwrap_or(0);
        (
            max(|t| t.exchange_table_bytes),
            max(|t| t.host_descriptor_bytes),
        )
    }

    /// The package lines of the run report: size, hash and reserved tables.
    pub fn report_lines(&self) -> String {
        let (exchange, host) = self.max_table_bytes();
        format!(
            "package: {} bytes, SHA-256 {}\n  {} tile images; reserved per tile (max): exchange tables {} B, host descriptors {} B\n",
            grouped(self.bytes),
            self.sha256,
            self.tiles.len(),
            grouped(exchange),
            grouped(host)
        )
    }
}

/// What the text rendering includes beyond the summary tables.
#[derive(Clone, Copy, Debug, Default)]
pub struct TextDetail {
    /// List every segment under its tile.
    pub segments: bool,
    /// List every binding slice.
    pub slices: bool,
    /// Only this tile in the tile table (with its segments).
    pub tile: Option<u32>,
}

/// `min / mean / max` of a per-tile figure.
fn spread(values: impl Iterator<Item = u64>) -> [String; 3] {
    let v: Vec<u64> = values.collect();
    if v.is_empty() {
        return ["-".into(), "-".into(), "-".into()];
    }
    let sum: u64 = v.iter().sum();
    [
        grouped(*v.iter().min().unwrap_or(&0)),
        grouped(sum / v.len() as u64),
        grouped(*v.iter().max().unwrap_or(&0)),
    ]
}

/// The aligned text `ipuc inspect` prints.
pub fn render_text(view: &PackageView, source: &str, detail: TextDetail) -> String {
    let mut o = String::new();
    write_header(&mut o, view, source);
    write_tiles(&mut o, view, detail);
    write_kernels(&mut o, view);
    write_bindings(&mut o, view, detail);
    write_host_calls(&mut o, view);
    write_steps(&mut o, view);
    write_plan_summary(&mut o, view);
    o
}

/// The package's source, format, digest, target and description.
fn write_header(o: &mut String, view: &PackageView, source: &str) {
    let t = &view.target;
    let _ = writeln!(o, "ipuc package {source}");
    let _ = writeln!(
        o,
        "  format v{} · producer \"{}\" · {} bytes · SHA-256 {}",
        view.format_version,
        view.producer,
        grouped(view.bytes),
        view.sha256
    );
    let _ = writeln!(
        o,
        "  target IPU21: {} tiles, SRAM {:#x}..{:#x} ({} B/tile), code below {:#x}, loader limit {:#x}, clock {} GHz",
        t.tile_count,
        t.tile_memory_base,
        u64::from(t.tile_memory_base) + u64::from(t.tile_memory_size),
        grouped(u64::from(t.tile_memory_size)),
        t.executable_limit,
        t.loader_limit,
        t.clock_hz as f64 / 1e9
    );
    for line in super::description_view::lines(&view.description) {
        let _ = writeln!(o, "  {line}");
    }
}

/// The per-tile figures' spread, then the tile table (`--tile`: one
/// tile, with its segments).
fn write_tiles(o: &mut String, view: &PackageView, detail: TextDetail) {
    let segments: usize = view.tiles.iter().map(|t| t.segments.len()).sum();
    let _ = writeln!(
        o,
        "\ntiles: {} images, {} segments",
        view.tiles.len(),
        segments
    );
    if view.tiles.is_empty() {
        return;
    }
    let mut s = TextTable::new(&[
        ("per tile (bytes)", Align::Left),
        ("min", Align::Right),
        ("mean", Align::Right),
        ("max", Align::Right),
    ]);
    type Figure = fn(&TileView) -> u64;
    let figures: [(&str, Figure); 5] = [
        ("memory", |t| t.memory_bytes),
        ("initialised data", |t| t.data_bytes),
        ("code", |t| t.code_bytes),
        ("exchange tables", |t| t.exchange_table_bytes),
        ("host descriptors", |t| t.host_descriptor_bytes),
    ];
    for (name, f) in figures {
        let [a, b, c] = spread(view.tiles.iter().map(f));
        s.row(vec![name.to_string(), a, b, c]);
    }
    o.push_str(&s.render(2));
    o.push('\n');
    write_tile_table(o, view, detail);
}

/// One row per tile (and, with `--segments` or `--tile`, per segment).
fn write_tile_table(o: &mut String, view: &PackageView, detail: TextDetail) {
    let mut table = TextTable::new(&[
        ("tile", Align::Right),
        ("entry", Align::Left),
        ("segs", Align::Right),
        ("memory", Align::Right),
        ("data", Align::Right),
        ("code", Align::Right),
        ("exch-table", Align::Right),
        ("host-desc", Align::Right),
    ]);
    let show_segments = detail.segments || detail.tile.is_some();
    for tile in view
        .tiles
        .iter()
        .filter(|t| detail.tile.is_none_or(|only| only == t.tile))
    {
        table.row(vec![
            tile.tile.to_string(),
            format!("{:#x}", tile.entry_point),
            tile.segments.len().to_string(),
            grouped(tile.memory_bytes),
            grouped(tile.data_bytes),
            grouped(tile.code_bytes),
            grouped(tile.exchange_table_bytes),
            grouped(tile.host_descriptor_bytes),
        ]);
        if show_segments {
            for s in &tile.segments {
                table.row(vec![
                    String::new(),
                    format!("  {:#x}..{:#x}", s.address, s.end),
                    s.flags.clone(),
                    grouped(u64::from(s.memory_size)),
                    grouped(s.data_bytes),
                    s.role.to_string(),
                    String::new(),
                    String::new(),
                ]);
            }
        }
    }
    if table.is_empty() {
        let _ = writeln!(
            o,
            "  (no tile {} in this package)",
            detail.tile.unwrap_or(0)
        );
    } else {
        o.push_str(&table.render(2));
    }
}

/// The kernel symbols and their addresses.
fn write_kernels(o: &mut String, view: &PackageView) {
    let _ = writeln!(o, "\nkernel symbols: {}", view.kernels.len());
    let mut k = TextTable::new(&[("address", Align::Left), ("name", Align::Left)]);
    for s in &view.kernels {
        k.row(vec![format!("{:#x}", s.address), s.name.clone()]);
    }
    if !k.is_empty() {
        o.push_str(&k.render(2));
    }
}

/// The bindings by kind, each binding's slices with `--slices`.
fn write_bindings(o: &mut String, view: &PackageView, detail: TextDetail) {
    let count = |kind: &str| view.bindings.iter().filter(|b| b.kind == kind).count();
    let _ = writeln!(
        o,
        "\nbindings: {} (inputs {}, outputs {}, weights {})",
        view.bindings.len(),
        count("input"),
        count("output"),
        count("weight")
    );
    let mut b = TextTable::new(&[
        ("kind", Align::Left),
        ("name", Align::Left),
        ("dtype", Align::Left),
        ("shape", Align::Left),
        ("bytes", Align::Right),
        ("slices", Align::Right),
        ("tiles", Align::Right),
    ]);
    for binding in &view.bindings {
        let shape = binding
            .shape
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("×");
        b.row(vec![
            binding.kind.to_string(),
            binding.name.clone(),
            binding.dtype.to_string(),
            format!("[{shape}]"),
            grouped(binding.bytes),
            binding.slices.len().to_string(),
            binding.tiles.to_string(),
        ]);
        if detail.slices {
            for s in &binding.slices {
                b.row(vec![
                    String::new(),
                    format!("  tile {} @ {:#x}", s.tile, s.tile_address),
                    String::new(),
                    format!("[{}..{}]", s.file_offset, s.file_offset + u64::from(s.size)),
                    grouped(u64::from(s.size)),
                    String::new(),
                    String::new(),
                ]);
            }
        }
    }
    if !b.is_empty() {
        o.push_str(&b.render(2));
    }
}

/// The host calls with the transfers they make.
fn write_host_calls(o: &mut String, view: &PackageView) {
    let _ = writeln!(o, "\nhost calls: {}", view.host_calls.len());
    for c in &view.host_calls {
        let _ = writeln!(
            o,
            "  {}  command {}  phases {}  invocations {}\n    in:  {}\n    out: {}",
            c.name,
            c.command,
            c.phases,
            c.invocations,
            if c.inputs.is_empty() {
                "-".to_string()
            } else {
                c.inputs.join(", ")
            },
            if c.outputs.is_empty() {
                "-".to_string()
            } else {
                c.outputs.join(", ")
            },
        );
    }
}

/// The step tables and each Repeat's trip count and body.
fn write_steps(o: &mut String, view: &PackageView) {
    let st = &view.steps;
    let _ = writeln!(
        o,
        "\nstep tables: {} tiles, {} steps, {} operations",
        st.tiles,
        grouped(st.steps as u64),
        st.operations
    );
    for (id, r) in &st.repeats {
        let _ = writeln!(
            o,
            "  repeat {id}: {} iterations, {} body steps per tile",
            r.trip_count, r.body_steps
        );
    }
}

/// The planner's summary entries, numbers grouped.
fn write_plan_summary(o: &mut String, view: &PackageView) {
    let _ = writeln!(o, "\nplan summary: {} entries", view.plan_summary.len());
    let mut p = TextTable::new(&[("key", Align::Left), ("value", Align::Right)]);
    for (key, v) in &view.plan_summary {
        let value = match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) if i < 0 => format!("-{}", grouped(i.unsigned_abs())),
                Some(i) => grouped(i.unsigned_abs()),
                None => n.to_string(),
            },
            other => other.to_string(),
        };
        p.row(vec![key.clone(), value]);
    }
    if !p.is_empty() {
        o.push_str(&p.render(2));
    }
}
