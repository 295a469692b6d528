//! `memory.html` (interactive per-tile memory map) and the interactive
//! memory-rejection reports, both rendered from `templates/`.

use serde::Serialize;

use super::html::{embed_json, thousands};
use super::memory::{AllocationClass, MemoryMap, MemoryRejection, TileMemoryMap};

const SCRIPT: &str = include_str!("assets/memory.js");
const CSS: &str = include_str!("assets/memory.css");

/// Class colours, in [`AllocationClass::ALL`] order (shared with memory.js).
pub(crate) const CLASS_COLORS: [&str; 7] = [
    "#6f4e9c", "#f28e2b", "#e15759", "#3b7dd8", "#59a14f", "#edc948", "#9aa3ad",
];

#[derive(Serialize)]
struct MapData<'a> {
    title: &'a str,
    budget: [u64; 4],
    classes: Vec<&'static str>,
    colors: [&'static str; 7],
    moments: &'a [String],
    names: Vec<&'a str>,
    tiles: Vec<u32>,
    /// Per tile, flat sextuples: name, class, address (−1 = unplaced), size, first, last.
    allocs: Vec<Vec<i64>>,
    /// Per tile: `[live bytes at peak, peak moment]`.
    peaks: Vec<[u64; 2]>,
    /// Tiles that hold nothing (drawn as unused in the overview).
    unused: &'a [u32],
    /// Physical C600 id of every logical tile (index = logical id).
    phys: Vec<u32>,
}

/// Every allocation name on `tiles`, sorted and once each (the pages'
/// allocations name theirs by index into it).
fn allocation_names(tiles: &[TileMemoryMap]) -> Vec<&str> {
    let mut names: Vec<&str> = tiles
        .iter()
        .flat_map(|t| t.allocations.iter().map(|a| a.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Renders the standalone interactive memory map.
pub fn render_memory_map(map: &MemoryMap) -> anyhow::Result<String> {
    map.validate()?;
    let names = allocation_names(&map.tiles);
    let mut tiles: Vec<_> = map.tiles.iter().collect();
    tiles.sort_by_key(|t| t.tile);
    let allocs = tiles
        .iter()
        .map(|t| {
            t.allocations
                .iter()
                .flat_map(|a| {
                    [
                        names.binary_search(&a.name.as_str()).unwrap_or(0) as i64,
                        AllocationClass::ALL
                            .iter()
                            .position(|c| *c == a.class)
                            .unwrap_or(0) as i64,
                        a.address.map_or(-1, i64::from),
                        a.size as i64,
                        i64::from(a.live.first),
                        i64::from(a.live.last),
                    ]
                })
                .collect()
        })
        .collect();
    let peaks = tiles
        .iter()
        .map(|t| {
            let p = t.peak(map.moments.len());
            [p.live_bytes, u64::from(p.moment)]
        })
        .collect();
    let b = map.budget;
    let data = MapData {
        title: &map.title,
        budget: [
            b.tile_bytes,
            b.support_reserve,
            u64::from(b.memory_base),
            u64::from(b.memory_end),
        ],
        classes: AllocationClass::ALL.iter().map(|c| c.name()).collect(),
        colors: CLASS_COLORS,
        moments: &map.moments,
        names,
        tiles: tiles.iter().map(|t| t.tile).collect(),
        allocs,
        peaks,
        unused: &map.unused_tiles,
        phys: physical_ids(),
    };
    let json = embed_json(&data)?;
    Ok(super::template::render_page(
        "memory.html",
        &map.title,
        CSS,
        Some(&json),
        SCRIPT,
        minijinja::context! { tile_ids => TILE_IDS },
    )?)
}

/// Physical C600 tile id of logical tile `tile` (the topology's mapping,
/// the one the package's tile images use); `tile` itself if out of range.
pub fn physical_tile(tile: u32) -> u32 {
    ipuc_target::ipu21::topology::LogicalTile::new(tile)
        .map_or(tile, |t| u32::from(t.physical().get()))
}

/// Physical id of every logical tile of the C600, by logical id.
fn physical_ids() -> Vec<u32> {
    (0..u32::from(ipuc_target::ipu21::topology::TILE_COUNT))
        .map(physical_tile)
        .collect()
}

/// How the memory reports number tiles (printed on every page).
pub const TILE_IDS: &str =
    "Tile numbers are logical (the planner's, placement's and compile errors' numbering, tiles 0..N of --planning-tiles N); the physical C600 id is shown beside each";

const REJECTION_SCRIPT: &str = include_str!("assets/rejection.js");

#[derive(Serialize)]
struct RejectionTileData {
    tile: u32,
    physical: u32,
    /// Flat quintuples: name, class, size, first, last.
    allocs: Vec<u64>,
}

#[derive(Serialize)]
struct RejectionData<'a> {
    budget: [u64; 2],
    classes: Vec<&'static str>,
    colors: [&'static str; 7],
    moments: &'a [String],
    names: Vec<&'a str>,
    tiles: Vec<RejectionTileData>,
    /// Placement: the tiles placement refused (logical ids).
    refused: &'a [u32],
}

/// The interactive section's data (none for a report without tiles).
fn rejection_data(r: &MemoryRejection) -> anyhow::Result<Option<String>> {
    if r.tiles.is_empty() {
        return Ok(None);
    }
    let names = allocation_names(&r.tiles);
    let tiles = r
        .tiles
        .iter()
        .map(|t| RejectionTileData {
            tile: t.tile,
            physical: physical_tile(t.tile),
            allocs: t
                .allocations
                .iter()
                .flat_map(|a| {
                    [
                        names.binary_search(&a.name.as_str()).unwrap_or(0) as u64,
                        class_index(a.class) as u64,
                        a.size,
                        u64::from(a.live.first),
                        u64::from(a.live.last),
                    ]
                })
                .collect(),
        })
        .collect();
    Ok(Some(embed_json(&RejectionData {
        budget: [r.budget.tile_bytes, r.budget.support_reserve],
        classes: AllocationClass::ALL.iter().map(|c| c.name()).collect(),
        colors: CLASS_COLORS,
        moments: &r.moments,
        names,
        tiles,
        refused: &r.refused_tiles,
    })?))
}

fn class_index(c: AllocationClass) -> usize {
    AllocationClass::ALL
        .iter()
        .position(|x| *x == c)
        .unwrap_or(0)
}

/// Width of the static peak bar, in pixels.
const BAR_W: f64 = 1100.0;

#[derive(Serialize)]
struct BarRect {
    x: String,
    w: String,
    tx: String,
    color: &'static str,
    name: String,
    class: &'static str,
    bytes: String,
    /// The name fits inside the rectangle.
    label: bool,
}

#[derive(Serialize)]
struct BarSpan {
    x: String,
    w: String,
}

#[derive(Serialize)]
struct Bar {
    width: String,
    rects: Vec<BarRect>,
    reserve: Option<BarSpan>,
    budget_x: String,
    budget_tx: String,
    effective_x: String,
}

/// Geometry of the peak tile's stacked bar (allocations, then the support
/// reserve, against the budget line).
fn peak_bar(r: &MemoryRejection) -> Bar {
    let b = r.budget;
    let effective = r.effective_bytes();
    let full = (effective.max(b.tile_bytes) as f64) * 1.04;
    let px = |bytes: u64| bytes as f64 / full * BAR_W;
    let mut x = 0.0;
    let rects = r
        .live
        .iter()
        .map(|a| {
            let w = px(a.bytes);
            let rect = BarRect {
                x: format!("{x:.2}"),
                w: format!("{w:.2}"),
                tx: format!("{:.2}", x + 4.0),
                color: CLASS_COLORS[class_index(a.class)],
                name: a.name.clone(),
                class: a.class.name(),
                bytes: thousands(a.bytes),
                // Approximate 12px system-ui glyph width: label only what fits.
                label: w > a.name.chars().count() as f64 * 6.6 + 8.0,
            };
            x += w;
            rect
        })
        .collect();
    let reserve = (b.support_reserve > 0).then(|| BarSpan {
        x: format!("{x:.2}"),
        w: format!("{:.2}", px(b.support_reserve)),
    });
    let bx = px(b.tile_bytes);
    Bar {
        width: format!("{:.0}", BAR_W + 20.0),
        rects,
        reserve,
        budget_x: format!("{bx:.2}"),
        budget_tx: format!("{:.2}", bx - 4.0),
        effective_x: format!(
            "{:.2}",
            (px(effective) + 4.0).min(BAR_W - 60.0).max(bx + 6.0)
        ),
    }
}

#[derive(Serialize)]
struct ClassRow {
    color: &'static str,
    name: &'static str,
    bytes: String,
    percent: String,
}

#[derive(Serialize)]
struct LiveRow {
    name: String,
    color: &'static str,
    class: &'static str,
    bytes: String,
    percent: String,
    cumulative: String,
    over: bool,
}

/// What the tile picker holds, as counted from the report itself: which
/// tiles, and how many of the refused (placement) or over-budget (planner)
/// tiles that is — "all N" only when it holds them all.
pub fn picker_note(r: &MemoryRejection) -> String {
    let n = r.tiles.len();
    let plural = |k: usize, one: &str, many: &str| {
        if k == 1 {
            format!("{k} {one}")
        } else {
            format!("{k} {many}")
        }
    };
    if r.shortfall.is_some() {
        return format!(
            "tile {} that did not fit (its image or patch data drawn where it would go), then {}; lifetimes over every schedule step",
            r.peak_tile,
            plural(n.saturating_sub(1), "other tile, the most loaded", "other tiles, the most loaded first")
        );
    }
    if r.source == "placement" {
        let refused = r.refused_tiles.len();
        let held = r
            .tiles
            .iter()
            .filter(|t| r.refused_tiles.contains(&t.tile))
            .count();
        let first = if held == refused && refused == 1 {
            "the one tile placement refused".to_string()
        } else if held == refused {
            format!("all {refused} tiles placement refused")
        } else {
            format!(
                "{held} of the {refused} tiles placement refused (the most loaded; the JSON's refused_tiles lists all)"
            )
        };
        let others = n - held;
        return if others == 0 {
            format!("{first}; lifetimes over every schedule step")
        } else {
            format!(
                "{first}, then {}; lifetimes over every schedule step",
                plural(
                    others,
                    "other tile placement accepted",
                    "other tiles placement accepted, the most loaded first"
                )
            )
        };
    }
    let over = r.picked_over_budget() as usize;
    let first = format!(
        "the {} of this candidate at the moment the planner checked it",
        plural(n, "most loaded tile", "most loaded tiles")
    );
    match r.tiles_over_budget.map(|t| t as usize) {
        Some(total) if over >= total => format!(
            "{first}: {} over budget{}",
            if total == 1 {
                "the one tile".to_string()
            } else {
                format!("all {total} tiles")
            },
            if n > total {
                format!(", {} under it", n - total)
            } else {
                String::new()
            }
        ),
        Some(total) => format!(
            "{first}: {over} of the {total} tiles over budget (the planner reports its {} most loaded tiles only)",
            ipuc_core::plan::memory::REPORTED_TILES
        ),
        None => format!("{first}: {over} of them over budget"),
    }
}

/// The report's one-line verdict: what is short and by how much, the
/// excess over the budget, or that it fits.
fn rejection_verdict(r: &MemoryRejection) -> String {
    if let Some(s) = &r.shortfall {
        format!(
            "{} short by {} B",
            s.what.split(" (").next().unwrap_or(&s.what),
            thousands(s.needed_bytes.saturating_sub(s.free_bytes))
        )
    } else if r.excess_bytes() > 0 {
        format!("over budget by {} B", thousands(r.excess_bytes()))
    } else {
        "fits".to_string()
    }
}

/// A late failure's shortfall for the template: what, where, needed
/// against free, and the parts that hold the room.
fn shortfall_context(s: &super::memory::Shortfall) -> minijinja::Value {
    let parts: Vec<_> = s
        .parts
        .iter()
        .map(|p| {
            minijinja::context! {
                name => &p.name,
                color => CLASS_COLORS[class_index(p.class)],
                class => p.class.name(),
                bytes => thousands(p.bytes),
            }
        })
        .collect();
    minijinja::context! {
        what => &s.what,
        tile => format!("{} (physical {})", s.tile, physical_tile(s.tile)),
        needed => thousands(s.needed_bytes),
        free => thousands(s.free_bytes),
        short => thousands(s.needed_bytes.saturating_sub(s.free_bytes)),
        limit => s.limit.map(|l| format!("{l:#x}")),
        parts,
    }
}

/// Renders the memory-rejection report (`templates/rejection.html`): the
/// reported tile's peak as a bar and by class, the tile picker with each
/// tile's live bytes over the moments against the budget and the
/// allocations live at the selected moment (its peak first), and the
/// reported tile's full table.
pub fn render_rejection(r: &MemoryRejection) -> anyhow::Result<String> {
    let b = r.budget;
    let effective = r.effective_bytes();
    let budget = b.tile_bytes.max(1) as f64;
    let title = format!("Memory rejection: {}", r.operation);
    let verdict = rejection_verdict(r);
    let mut classes: Vec<ClassRow> = r
        .bytes_by_class()
        .into_iter()
        .map(|(class, bytes)| ClassRow {
            color: CLASS_COLORS[class_index(class)],
            name: class.name(),
            bytes: thousands(bytes),
            percent: format!("{:.1}", 100.0 * bytes as f64 / budget),
        })
        .collect();
    if b.support_reserve > 0 {
        classes.push(ClassRow {
            color: "#e4e7eb",
            name: "support reserve",
            bytes: thousands(b.support_reserve),
            percent: format!("{:.1}", 100.0 * b.support_reserve as f64 / budget),
        });
    }
    let mut cumulative = b.support_reserve;
    let rows: Vec<LiveRow> = r
        .live
        .iter()
        .map(|a| {
            cumulative += a.bytes;
            LiveRow {
                name: a.name.clone(),
                color: CLASS_COLORS[class_index(a.class)],
                class: a.class.name(),
                bytes: thousands(a.bytes),
                percent: format!("{:.1}", 100.0 * a.bytes as f64 / budget),
                cumulative: thousands(cumulative),
                over: cumulative > b.tile_bytes,
            }
        })
        .collect();
    let data = rejection_data(r)?;
    let shortfall = r.shortfall.as_ref().map(shortfall_context);
    let picker_note = picker_note(r);
    let body = minijinja::context! {
        verdict,
        source => &r.source,
        operation => &r.operation,
        tile => format!("{} (physical {})", r.peak_tile, physical_tile(r.peak_tile)),
        tile_ids => "logical id",
        moment => &r.peak_moment,
        moment_index => r.peak_moment_index,
        live => thousands(effective - b.support_reserve),
        reserve_bytes => b.support_reserve,
        reserve => thousands(b.support_reserve),
        effective => thousands(effective),
        budget => thousands(b.tile_bytes),
        tiles_over => r.tiles_over_budget,
        shortfall,
        bar => peak_bar(r),
        classes,
        rows,
        interactive => data.is_some(),
        picker_note,
        tile_note => TILE_IDS,
    };
    Ok(super::template::render_page(
        "rejection.html",
        &title,
        CSS,
        data.as_deref(),
        if data.is_some() { REJECTION_SCRIPT } else { "" },
        body,
    )?)
}
