//! `memory.html` (interactive per-tile memory map) and the static
//! memory-rejection report.

use std::fmt::Write as _;

use serde::Serialize;

use super::html::{embed_json, escape, page, thousands};
use super::memory::{AllocationClass, MemoryMap, MemoryRejection};

const SCRIPT: &str = include_str!("assets/memory.js");
const CSS: &str = include_str!("assets/memory.css");

/// Class colours, in [`AllocationClass::ALL`] order (shared with memory.js).
pub(crate) const CLASS_COLORS: [&str; 7] = [
    "#6f4e9c", "#f28e2b", "#e15759", "#3b7dd8", "#59a14f", "#edc948", "#9aa3ad",
];

fn class_color(c: AllocationClass) -> &'static str {
    CLASS_COLORS[AllocationClass::ALL
        .iter()
        .position(|x| *x == c)
        .unwrap_or(0)]
}

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
}

/// Renders the standalone interactive memory map.
pub fn render_memory_map(map: &MemoryMap) -> anyhow::Result<String> {
    map.validate()?;
    let mut names: Vec<&str> = map
        .tiles
        .iter()
        .flat_map(|t| t.allocations.iter().map(|a| a.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
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
    };
    let json = embed_json(&data)?;
    Ok(super::template::render_page(
        "memory.html",
        &map.title,
        CSS,
        Some(&json),
        SCRIPT,
        minijinja::context! {},
    )?)
}

/// Renders the memory-rejection report (static HTML with inline SVG).
pub fn render_rejection(r: &MemoryRejection) -> String {
    let b = r.budget;
    let effective = r.effective_bytes();
    let title = format!("Memory rejection: {}", r.operation);
    let mut body = String::new();
    let verdict = if r.excess_bytes() > 0 {
        format!("over budget by {} B", thousands(r.excess_bytes()))
    } else {
        "fits".to_string()
    };
    let _ = write!(
        body,
        r#"<header><h1>{title}<span class="badge bad">{verdict}</span></h1>
<div class="stats"><span>operation <b>{op}</b></span><span>peak tile <b>{tile}</b></span><span>peak moment <b>{moment}</b> (#{mi})</span>
<span>live <b>{live}</b> B + support reserve <b>{reserve}</b> B = <b>{eff}</b> B vs budget <b>{budget}</b> B</span>{over}</div></header><section>"#,
        title = escape(&title),
        op = escape(&r.operation),
        tile = r.peak_tile,
        moment = escape(&r.peak_moment),
        mi = r.peak_moment_index,
        live = thousands(effective - b.support_reserve),
        reserve = thousands(b.support_reserve),
        eff = thousands(effective),
        budget = thousands(b.tile_bytes),
        over = r.tiles_over_budget.map_or(String::new(), |n| format!(
            "<span><b>{n}</b> tiles over budget</span>"
        )),
    );
    body.push_str("<h2>Tile memory at the peak</h2>");
    body.push_str(&stacked_bar(r));
    if !r.timeline.is_empty() {
        body.push_str("<h2>Live bytes on the peak tile over the schedule</h2>");
        body.push_str(&timeline_svg(r));
    }
    body.push_str(&class_table(r));
    body.push_str("</section>");
    let data = rejection_data(r);
    if data.is_some() {
        body.push_str(&format!(
            r#"<section><h2>Tiles <span class="muted">({n} most loaded tiles of this rejection, {src}; pick one)</span></h2>
<div class="controls"><label>tile <select id="rtile"></select></label><button id="rprev">&larr;</button><button id="rnext">&rarr;</button><button id="rworst">worst tile</button><button id="rpeak">this tile's peak</button></div>
<h2 id="rtimelinetitle"></h2><canvas id="timeline"></canvas>
<h2 id="rlivetitle"></h2><div id="rlive"></div></section><div id="tip"></div>"#,
            n = r.tiles.len(),
            src = escape(&r.source),
        ));
    }
    body.push_str(&format!(
        "<section><details><summary>All {} allocations live on the reported tile {} (static table)</summary>",
        r.live.len(),
        r.peak_tile
    ));
    body.push_str(&live_table(r));
    body.push_str("</details></section>");
    match data {
        Some(json) => page(&title, CSS, &body, Some(&json), REJECTION_SCRIPT),
        None => page(&title, CSS, &body, None, ""),
    }
}

const REJECTION_SCRIPT: &str = include_str!("assets/rejection.js");

#[derive(Serialize)]
struct RejectionTileData {
    tile: u32,
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
}

/// The interactive section's data (none for a report without tiles).
fn rejection_data(r: &MemoryRejection) -> Option<String> {
    if r.tiles.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = r
        .tiles
        .iter()
        .flat_map(|t| t.allocations.iter().map(|a| a.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let tiles = r
        .tiles
        .iter()
        .map(|t| RejectionTileData {
            tile: t.tile,
            allocs: t
                .allocations
                .iter()
                .flat_map(|a| {
                    [
                        names.binary_search(&a.name.as_str()).unwrap_or(0) as u64,
                        AllocationClass::ALL
                            .iter()
                            .position(|c| *c == a.class)
                            .unwrap_or(0) as u64,
                        a.size,
                        u64::from(a.live.first),
                        u64::from(a.live.last),
                    ]
                })
                .collect(),
        })
        .collect();
    embed_json(&RejectionData {
        budget: [r.budget.tile_bytes, r.budget.support_reserve],
        classes: AllocationClass::ALL.iter().map(|c| c.name()).collect(),
        colors: CLASS_COLORS,
        moments: &r.moments,
        names,
        tiles,
    })
    .ok()
}

const BAR_W: f64 = 1100.0;

fn stacked_bar(r: &MemoryRejection) -> String {
    let b = r.budget;
    let effective = r.effective_bytes();
    let full = (effective.max(b.tile_bytes) as f64) * 1.04;
    let px = |bytes: u64| bytes as f64 / full * BAR_W;
    let mut svg = format!(
        r#"<svg class="bar" width="{w}" height="64" viewBox="0 0 {w} 64">"#,
        w = BAR_W + 20.0
    );
    let mut x = 0.0;
    for a in &r.live {
        let w = px(a.bytes);
        let _ = write!(
            svg,
            r##"<rect x="{x:.2}" y="8" width="{w:.2}" height="30" fill="{c}" stroke="#fff" stroke-width="0.5"><title>{n} ({cl}): {bytes} B</title></rect>""##,
            c = class_color(a.class),
            n = escape(&a.name),
            cl = a.class.name(),
            bytes = thousands(a.bytes)
        );
        // Approximate 12px system-ui glyph width: label only what fits.
        if w > a.name.chars().count() as f64 * 6.6 + 8.0 {
            let _ = write!(
                svg,
                r##"<text x="{tx:.2}" y="23" font-size="12" fill="#fff" dominant-baseline="middle" pointer-events="none">{n}</text>"##,
                tx = x + 4.0,
                n = escape(&a.name)
            );
        }
        x += w;
    }
    let w = px(b.support_reserve);
    let _ = write!(
        svg,
        r##"<rect x="{x:.2}" y="8" width="{w:.2}" height="30" fill="url(#hatch)" stroke="#9aa3ad"><title>support reserve: {} B</title></rect>"##,
        thousands(b.support_reserve)
    );
    let bx = px(b.tile_bytes);
    let _ = write!(
        svg,
        r##"<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#e4e7eb"/><line x1="0" y1="0" x2="0" y2="6" stroke="#9aa3ad" stroke-width="2"/></pattern></defs>
<line x1="{bx:.2}" y1="2" x2="{bx:.2}" y2="44" stroke="#d62728" stroke-width="2"/><text x="{tx:.2}" y="58" fill="#d62728" font-size="12" text-anchor="end">budget {budget} B</text>
<text x="{ex:.2}" y="58" font-size="12" text-anchor="start" fill="#1d2330">{eff} B</text></svg>"##,
        tx = bx - 4.0,
        ex = (px(effective) + 4.0).min(BAR_W - 60.0).max(bx + 6.0),
        budget = thousands(b.tile_bytes),
        eff = thousands(effective),
    );
    svg
}

fn timeline_svg(r: &MemoryRejection) -> String {
    let b = r.budget;
    let (w, h, left, bottom) = (BAR_W, 220.0, 70.0, 24.0);
    let n = r.timeline.len().max(1);
    let max = r
        .timeline
        .iter()
        .map(|(_, v)| v + b.support_reserve)
        .max()
        .unwrap_or(0)
        .max(b.tile_bytes) as f64
        * 1.08;
    let y = |v: u64| (h - bottom) - v as f64 / max * (h - bottom - 8.0);
    let bw = (w - left) / n as f64;
    let mut svg = format!(
        r#"<svg width="{}" height="{h}" viewBox="0 0 {} {h}">"#,
        w + 20.0,
        w + 20.0
    );
    for (i, (name, v)) in r.timeline.iter().enumerate() {
        let total = v + b.support_reserve;
        let x = left + i as f64 * bw;
        let fill = if i as u32 == r.peak_moment_index {
            "#d62728"
        } else {
            "#3b7dd8"
        };
        let _ = write!(
            svg,
            r##"<rect x="{x:.2}" y="{y0:.2}" width="{bw2:.2}" height="{hh:.2}" fill="{fill}"><title>#{i} {name}: {v} B live + {res} B reserve = {t} B</title></rect>"##,
            y0 = y(total),
            bw2 = (bw - 1.0).max(0.5),
            hh = (y(0) - y(total)).max(0.0),
            name = escape(name),
            v = thousands(*v),
            res = thousands(b.support_reserve),
            t = thousands(total),
        );
    }
    // Moment names under the bars, as many as fit without overlapping.
    let label_every = r
        .timeline
        .iter()
        .map(|(name, _)| name.chars().count() as f64 * 6.2 + 10.0)
        .fold(1.0f64, f64::max)
        .div_euclid(bw)
        .max(0.0) as usize
        + 1;
    for (i, (name, _)) in r.timeline.iter().enumerate().step_by(label_every) {
        let _ = write!(
            svg,
            r##"<text x="{x:.2}" y="{ty:.2}" font-size="11" text-anchor="middle" fill="{fill}">{name}</text>"##,
            x = left + (i as f64 + 0.5) * bw,
            ty = h - 8.0,
            fill = if i as u32 == r.peak_moment_index {
                "#d62728"
            } else {
                "#5f6b7a"
            },
            name = escape(name),
        );
    }
    let by = y(b.tile_bytes);
    let ry = y(b.support_reserve);
    let _ = write!(
        svg,
        r##"<line x1="{left}" y1="{by:.2}" x2="{w}" y2="{by:.2}" stroke="#d62728" stroke-width="1.5" stroke-dasharray="6 3"/>
<text x="{lt}" y="{by:.2}" font-size="11" text-anchor="end" dominant-baseline="middle" fill="#d62728">{bl}</text>
<line x1="{left}" y1="{ry:.2}" x2="{w}" y2="{ry:.2}" stroke="#6b7480" stroke-width="1" stroke-dasharray="2 3"/>
<text x="{lt}" y="{ry:.2}" font-size="11" text-anchor="end" dominant-baseline="middle" fill="#6b7480">reserve</text>
<line x1="{left}" y1="{y0:.2}" x2="{w}" y2="{y0:.2}" stroke="#c4cbd4"/></svg>"##,
        lt = left - 4.0,
        bl = thousands(b.tile_bytes),
        y0 = y(0),
    );
    svg
}

fn class_table(r: &MemoryRejection) -> String {
    let mut t = String::from(
        r#"<h2>By class</h2><table><thead><tr><th class="l">class</th><th>bytes</th><th>% of budget</th></tr></thead><tbody>"#,
    );
    let budget = r.budget.tile_bytes.max(1) as f64;
    for (class, bytes) in r.bytes_by_class() {
        let _ = write!(
            t,
            r#"<tr><td class="l"><span class="swatch" style="background:{}"></span>{}</td><td>{}</td><td>{:.1}</td></tr>"#,
            class_color(class),
            class.name(),
            thousands(bytes),
            100.0 * bytes as f64 / budget
        );
    }
    let _ = write!(
        t,
        r#"<tr><td class="l"><span class="swatch" style="background:#e4e7eb"></span>support reserve</td><td>{}</td><td>{:.1}</td></tr></tbody></table>"#,
        thousands(r.budget.support_reserve),
        100.0 * r.budget.support_reserve as f64 / budget
    );
    t
}

fn live_table(r: &MemoryRejection) -> String {
    let mut t = format!(
        r#"<h2>{} allocations live on tile {} at “{}”</h2><table><thead><tr><th class="l">allocation</th><th class="l">class</th><th>bytes</th><th>% of budget</th><th>cumulative</th></tr></thead><tbody>"#,
        r.live.len(),
        r.peak_tile,
        escape(&r.peak_moment)
    );
    let budget = r.budget.tile_bytes.max(1) as f64;
    let mut cumulative = r.budget.support_reserve;
    for a in &r.live {
        cumulative += a.bytes;
        let over = if cumulative > r.budget.tile_bytes {
            " class=\"hl\""
        } else {
            ""
        };
        let _ = write!(
            t,
            r#"<tr{over}><td class="l">{}</td><td class="l"><span class="swatch" style="background:{}"></span>{}</td><td>{}</td><td>{:.1}</td><td>{}</td></tr>"#,
            escape(&a.name),
            class_color(a.class),
            a.class.name(),
            thousands(a.bytes),
            100.0 * a.bytes as f64 / budget,
            thousands(cumulative)
        );
    }
    t.push_str(
        "</tbody></table><p class=\"muted\">Cumulative starts at the support reserve; highlighted rows are past the budget.</p>",
    );
    t
}
