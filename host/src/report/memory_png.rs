//! `memory.png`: the all-tiles overview of a memory map drawn by ipuc itself
//! (`embedded-graphics` primitives and bitmap fonts on an `image` buffer,
//! PNG-encoded by `image`), so a person sees every tile at a glance without
//! a browser.
//!
//! Layout: a title and summary line, then every tile in id order as a
//! column whose height is the SRAM address range (`memory_base` at the
//! top), flowed into rows of [`PLOT_W`] pixels. The used tiles share the
//! width (between [`MIN_COLUMN_W`] and [`MAX_COLUMN_W`] pixels each, so 20
//! tiles are 20 wide, labelled columns and 1472 are four rows of 4-pixel
//! columns); a run of [`GAP_RUN`] or more unused tiles is one labelled gap
//! column. Every allocation is drawn at its address in its class colour
//! (allocations that reuse an address drawn once, by their first occupant,
//! as in the HTML overview with "Reused allocations" unchecked); a faint
//! line marks the start of region 1; unused tiles are light grey; a red
//! tick above a column marks a tile over budget. A legend closes the image.

use std::convert::Infallible;
use std::path::Path;

use anyhow::{Context, Result};
use embedded_graphics::mono_font::iso_8859_1::{FONT_6X10, FONT_9X15_BOLD};
use embedded_graphics::mono_font::MonoTextStyle;
use embedded_graphics::pixelcolor::{Rgb888, RgbColor};
use embedded_graphics::prelude::*;
use embedded_graphics::primitives::{PrimitiveStyle, Rectangle};
use embedded_graphics::text::Text;

use super::memory::{AllocationClass, MemoryMap};
use super::memory_html::CLASS_COLORS;

/// Pixels of a row's plot.
pub const PLOT_W: u32 = 1472;
/// Narrowest and widest tile column.
pub const MIN_COLUMN_W: u32 = 4;
pub const MAX_COLUMN_W: u32 = 48;
/// Unused tiles in a run this long or longer are drawn as one gap column.
pub const GAP_RUN: usize = 8;
/// Width of a gap column.
const GAP_W: u32 = 64;
/// Height of a row's SRAM band when the tiles wrap into several rows / fit
/// in one.
pub const BAND_H: u32 = 150;
pub const TALL_BAND_H: u32 = 300;
/// Columns at least this wide get their tile id below them.
const LABELLED_W: u32 = 20;
const LEFT: u32 = 64;
const RIGHT: u32 = 16;
const TOP: u32 = 58;
const ROW_GAP: u32 = 30;
const LABEL_H: u32 = 14;
const LEGEND_H: u32 = 44;

/// One column of the overview.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Column {
    /// A tile: its id and index in `map.tiles` (`None`: unused).
    Tile(u32, Option<usize>),
    /// A run of unused tiles `from..=to`.
    Gap { from: u32, to: u32 },
}

/// Where the columns go.
struct Layout {
    /// Column, x, row.
    columns: Vec<(Column, u32, u32)>,
    column_w: u32,
    rows: u32,
    band_h: u32,
    label_h: u32,
}

impl Layout {
    fn of(map: &MemoryMap) -> Layout {
        let mut tiles: Vec<(u32, Option<usize>)> = map
            .tiles
            .iter()
            .enumerate()
            .map(|(i, t)| (t.tile, Some(i)))
            .chain(map.unused_tiles.iter().map(|&t| (t, None)))
            .collect();
        tiles.sort_unstable();
        let mut columns = Vec::new();
        let mut k = 0;
        while k < tiles.len() {
            let run = tiles[k..].iter().take_while(|t| t.1.is_none()).count();
            if run >= GAP_RUN {
                columns.push(Column::Gap {
                    from: tiles[k].0,
                    to: tiles[k + run - 1].0,
                });
                k += run;
            } else {
                for &(id, i) in &tiles[k..k + run.max(1)] {
                    columns.push(Column::Tile(id, i));
                }
                k += run.max(1);
            }
        }
        let gaps = columns
            .iter()
            .filter(|c| matches!(c, Column::Gap { .. }))
            .count() as u32;
        let narrow = (columns.len() as u32 - gaps).max(1);
        let column_w =
            (PLOT_W.saturating_sub(gaps * GAP_W) / narrow).clamp(MIN_COLUMN_W, MAX_COLUMN_W);
        let (mut x, mut row) = (0, 0);
        let columns: Vec<(Column, u32, u32)> = columns
            .into_iter()
            .map(|c| {
                let w = if matches!(c, Column::Gap { .. }) {
                    GAP_W
                } else {
                    column_w
                };
                if x + w > PLOT_W && x > 0 {
                    row += 1;
                    x = 0;
                }
                let at = (c, LEFT + x, row);
                x += w;
                at
            })
            .collect();
        let rows = row + 1;
        Layout {
            columns,
            column_w,
            rows,
            band_h: if rows == 1 { TALL_BAND_H } else { BAND_H },
            label_h: if column_w >= LABELLED_W { LABEL_H } else { 0 },
        }
    }

    fn row_h(&self) -> u32 {
        self.band_h + self.label_h + ROW_GAP
    }

    fn size(&self) -> (u32, u32) {
        (
            LEFT + PLOT_W + RIGHT,
            TOP + self.rows * self.row_h() + LEGEND_H,
        )
    }
}

/// Image width × height of `map`'s overview.
pub fn size(map: &MemoryMap) -> (u32, u32) {
    Layout::of(map).size()
}

struct Canvas(image::RgbImage);

impl OriginDimensions for Canvas {
    fn size(&self) -> Size {
        Size::new(self.0.width(), self.0.height())
    }
}

impl DrawTarget for Canvas {
    type Color = Rgb888;
    type Error = Infallible;
    fn draw_iter<I>(&mut self, pixels: I) -> Result<(), Infallible>
    where
        I: IntoIterator<Item = Pixel<Rgb888>>,
    {
        let (w, h) = self.0.dimensions();
        for Pixel(p, c) in pixels {
            if p.x >= 0 && p.y >= 0 && (p.x as u32) < w && (p.y as u32) < h {
                self.0
                    .put_pixel(p.x as u32, p.y as u32, image::Rgb([c.r(), c.g(), c.b()]));
            }
        }
        Ok(())
    }
}

fn hex_color(s: &str) -> Rgb888 {
    let v = u32::from_str_radix(s.trim_start_matches('#'), 16).unwrap_or(0x808080);
    Rgb888::new((v >> 16) as u8, (v >> 8) as u8, v as u8)
}

fn class_rgb(c: AllocationClass) -> Rgb888 {
    let i = AllocationClass::ALL
        .iter()
        .position(|x| *x == c)
        .unwrap_or(0);
    hex_color(CLASS_COLORS[i])
}

const INK: Rgb888 = Rgb888::new(0x1d, 0x23, 0x30);
const MUTED: Rgb888 = Rgb888::new(0x5f, 0x6b, 0x7a);
const FREE: Rgb888 = Rgb888::new(0xfa, 0xfb, 0xfc);
const UNUSED: Rgb888 = Rgb888::new(0xe4, 0xe7, 0xeb);
const HATCH: Rgb888 = Rgb888::new(0xc4, 0xcb, 0xd4);
const RED: Rgb888 = Rgb888::new(0xd6, 0x27, 0x28);
const GAP: Rgb888 = Rgb888::new(0xee, 0xf0, 0xf3);

fn rect(c: &mut Canvas, x: i32, y: i32, w: u32, h: u32, color: Rgb888) {
    let _ = Rectangle::new(Point::new(x, y), Size::new(w, h))
        .into_styled(PrimitiveStyle::with_fill(color))
        .draw(c);
}

fn text(c: &mut Canvas, s: &str, x: i32, y: i32, color: Rgb888, bold: bool) {
    // The fonts cover ISO 8859-1; anything else becomes '?'.
    let s: String = s
        .chars()
        .map(|ch| if (ch as u32) < 256 { ch } else { '?' })
        .collect();
    let font = if bold { &FONT_9X15_BOLD } else { &FONT_6X10 };
    let _ = Text::new(&s, Point::new(x, y), MonoTextStyle::new(font, color)).draw(c);
}

/// Renders the overview of `map` (every tile, used or not) as PNG bytes.
pub fn render(map: &MemoryMap) -> Result<Vec<u8>> {
    let layout = Layout::of(map);
    let (w, h) = layout.size();
    let mut c = Canvas(image::RgbImage::from_pixel(
        w,
        h,
        image::Rgb([255, 255, 255]),
    ));
    let b = map.budget;
    let scale = AddressScale {
        base: u64::from(b.memory_base),
        span: f64::from(b.memory_end.saturating_sub(b.memory_base).max(1)),
        band: layout.band_h,
    };
    let region1 = u64::from(ipuc_target::ipu21::sram::EXECUTABLE_MEMORY_LIMIT);
    let region1_y = (region1 > u64::from(b.memory_base) && region1 < u64::from(b.memory_end))
        .then(|| scale.y(region1) as i32);
    let moments = map.moments.len();
    let peaks: Vec<u64> = map
        .tiles
        .iter()
        .map(|t| t.peak(moments).live_bytes)
        .collect();
    draw_title(&mut c, map, &peaks);
    draw_address_axes(&mut c, &layout, &b, region1_y);
    draw_columns(&mut c, map, &layout, &scale, region1_y, &peaks);
    draw_legend(&mut c, h);

    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(c.0)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .context("encoding memory.png")?;
    Ok(out)
}

/// SRAM addresses to pixels down a band `band` pixels high.
struct AddressScale {
    base: u64,
    span: f64,
    band: u32,
}

impl AddressScale {
    fn y(&self, addr: u64) -> f64 {
        addr.saturating_sub(self.base) as f64 / self.span * f64::from(self.band)
    }
}

/// The title and the summary line: tiles used and unused, the peak tile
/// against the budget, how many tiles are over it.
fn draw_title(c: &mut Canvas, map: &MemoryMap, peaks: &[u64]) {
    let b = map.budget;
    let n = (map.tiles.len() + map.unused_tiles.len()) as u32;
    let over = peaks
        .iter()
        .filter(|&&p| p + b.support_reserve > b.tile_bytes)
        .count();
    let peak = map.peak_tile();
    text(c, &map.title, LEFT as i32, 20, INK, true);
    let summary = format!(
        "{} tiles: {} used, {} unused; {}{}",
        n,
        map.tiles.len(),
        map.unused_tiles.len(),
        match peak {
            Some(p) => format!(
                "peak tile {} (physical {}): {} B of the {} B budget at \"{}\"",
                p.tile,
                super::memory_html::physical_tile(p.tile),
                super::html::thousands(p.live_bytes + b.support_reserve),
                super::html::thousands(b.tile_bytes),
                map.moments
                    .get(p.moment as usize)
                    .map_or("", String::as_str)
            ),
            None => "no placed tile".into(),
        },
        if over > 0 {
            format!("; {over} tiles over budget")
        } else {
            String::new()
        }
    );
    text(c, &summary, LEFT as i32, 38, MUTED, false);
}

/// The address axis of every row: start, region 1, end.
fn draw_address_axes(
    c: &mut Canvas,
    layout: &Layout,
    b: &super::memory::MemoryBudget,
    region1_y: Option<i32>,
) {
    let region1 = u64::from(ipuc_target::ipu21::sram::EXECUTABLE_MEMORY_LIMIT);
    for row in 0..layout.rows {
        let top = (TOP + row * layout.row_h()) as i32;
        text(
            c,
            &format!("{:#x}", b.memory_base),
            4,
            top + 8,
            MUTED,
            false,
        );
        if let Some(y) = region1_y {
            text(c, &format!("{region1:#x}"), 4, top + y + 4, MUTED, false);
        }
        text(
            c,
            &format!("{:#x}", b.memory_end),
            4,
            top + layout.band_h as i32,
            MUTED,
            false,
        );
    }
}

/// Every column: a gap of unused tiles, an unused tile, or a placed tile
/// with its allocations; tile ids below every labelled column, else above
/// every ~50 pixels.
fn draw_columns(
    c: &mut Canvas,
    map: &MemoryMap,
    layout: &Layout,
    scale: &AddressScale,
    region1_y: Option<i32>,
    peaks: &[u64],
) {
    let b = map.budget;
    let band = layout.band_h;
    let cw = layout.column_w - u32::from(layout.column_w > 2);
    let every = if layout.label_h > 0 {
        (26 / layout.column_w + 1).max(1)
    } else {
        50 / layout.column_w
    };
    let mut since_label = every;
    for &(column, x, row) in &layout.columns {
        let x = x as i32;
        let top = (TOP + row * layout.row_h()) as i32;
        let (tile, index) = match column {
            Column::Gap { from, to } => {
                draw_gap(c, x, top, band, (from, to));
                since_label = every;
                continue;
            }
            Column::Tile(tile, index) => (tile, index),
        };
        if since_label >= every || x == LEFT as i32 {
            let label = format!("{tile}");
            if layout.label_h > 0 {
                let tx = x + layout.column_w as i32 / 2 - 3 * label.len() as i32;
                text(c, &label, tx, top + band as i32 + 11, MUTED, false);
            } else {
                text(c, &label, x, top - 3, MUTED, false);
            }
            since_label = 0;
        }
        since_label += 1;
        let Some(i) = index else {
            rect(c, x, top, cw, band, UNUSED);
            continue;
        };
        rect(c, x, top, cw, band, FREE);
        if let Some(y) = region1_y {
            rect(c, x, top + y, cw, 1, HATCH);
        }
        draw_allocations(c, &map.tiles[i], scale, (x, top, cw));
        if peaks[i] + b.support_reserve > b.tile_bytes {
            rect(c, x, top - 6, cw, 4, RED);
        }
    }
}

/// A run of unused tiles `from..=to` drawn as one gap column.
fn draw_gap(c: &mut Canvas, x: i32, top: i32, band: u32, (from, to): (u32, u32)) {
    rect(c, x + 2, top, GAP_W - 4, band, GAP);
    let cx = x + GAP_W as i32 / 2;
    for (k, line) in [
        format!("{}", to - from + 1),
        "unused".into(),
        format!("{from}-{to}"),
    ]
    .iter()
    .enumerate()
    {
        let tx = cx - 3 * line.len() as i32;
        text(c, line, tx, top + 30 + 12 * k as i32, MUTED, false);
    }
}

/// A tile's placed allocations in its column at `(x, top)`, `cw` wide.
/// First occupants only: sorted by first moment, skipping what overlaps
/// an address range already drawn.
fn draw_allocations(
    c: &mut Canvas,
    t: &super::memory::TileMemoryMap,
    scale: &AddressScale,
    (x, top, cw): (i32, i32, u32),
) {
    let mut allocs: Vec<_> = t
        .allocations
        .iter()
        .filter(|a| a.address.is_some())
        .collect();
    allocs.sort_by_key(|a| (a.live.first, a.address));
    let mut drawn: Vec<(u64, u64)> = Vec::new();
    for a in allocs {
        let start = u64::from(a.address.unwrap_or(0));
        let end = start + a.size;
        if drawn.iter().any(|&(s, e)| start < e && s < end) {
            continue;
        }
        drawn.push((start, end));
        let y0 = scale.y(start) as i32;
        let y1 = scale.y(end).ceil() as i32;
        let hh = (y1 - y0).max(1) as u32;
        rect(c, x, top + y0, cw, hh, class_rgb(a.class));
    }
}

/// The colour legend and the note on how to read the picture, at the
/// bottom of an image `h` pixels high.
fn draw_legend(c: &mut Canvas, h: u32) {
    let ly = (h - LEGEND_H + 20) as i32;
    let mut lx = LEFT as i32;
    let entries = AllocationClass::ALL
        .iter()
        .map(|&cl| (cl.name().to_string(), class_rgb(cl)))
        .chain([
            ("free".to_string(), FREE),
            ("unused tile".to_string(), UNUSED),
            ("over budget".to_string(), RED),
        ]);
    for (name, color) in entries {
        rect(c, lx - 1, ly - 9, 14, 12, HATCH);
        rect(c, lx, ly - 8, 12, 10, color);
        text(c, &name, lx + 16, ly, INK, false);
        lx += 16 + 6 * name.len() as i32 + 18;
    }
    text(
        c,
        "each column is one tile, logical ids: SRAM address top to bottom, faint line = region 1; reused addresses drawn once (first occupant); 8+ unused tiles in a row = one gap",
        LEFT as i32,
        ly + 16,
        MUTED,
        false,
    );
}

/// Writes [`render`]'s PNG to `path`.
pub fn write(path: &Path, map: &MemoryMap) -> Result<()> {
    let png = render(map)?;
    crate::fsio::write_atomic(path, &png).with_context(|| format!("writing {}", path.display()))
}
