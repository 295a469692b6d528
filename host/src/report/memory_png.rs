//! `memory.png`: the all-tiles overview of a memory map drawn by ipuc itself
//! (`embedded-graphics` primitives and bitmap fonts on an `image` buffer,
//! PNG-encoded by `image`), so a person sees every tile at a glance without
//! a browser.
//!
//! Layout: a title and summary line, then the tiles in rows of
//! [`TILES_PER_ROW`]; each tile is a column of [`COLUMN_W`] pixels whose
//! height is the SRAM address range (`memory_base` at the top). Every
//! allocation is drawn at its address in its class colour (allocations that
//! reuse an address drawn once, by their first occupant, as in the HTML
//! overview with "Reused allocations" unchecked); unused tiles are light
//! grey; a red tick above a column marks a tile over budget.
//! A legend closes the image.

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

/// Tiles drawn per row.
pub const TILES_PER_ROW: u32 = 368;
/// Pixels per tile column.
pub const COLUMN_W: u32 = 4;
/// Height of a row's SRAM band.
pub const BAND_H: u32 = 150;
const LEFT: u32 = 56;
const RIGHT: u32 = 16;
const TOP: u32 = 58;
const ROW_GAP: u32 = 30;
const LEGEND_H: u32 = 44;

/// Image width × height for `tiles` tiles.
pub fn size(tiles: u32) -> (u32, u32) {
    let rows = tiles.div_ceil(TILES_PER_ROW).max(1);
    (
        LEFT + TILES_PER_ROW * COLUMN_W + RIGHT,
        TOP + rows * (BAND_H + ROW_GAP) + LEGEND_H,
    )
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
    let mut tiles: Vec<(u32, Option<usize>)> = map
        .tiles
        .iter()
        .enumerate()
        .map(|(i, t)| (t.tile, Some(i)))
        .chain(map.unused_tiles.iter().map(|&t| (t, None)))
        .collect();
    tiles.sort_unstable();
    let n = tiles.len() as u32;
    let (w, h) = size(n);
    let mut c = Canvas(image::RgbImage::from_pixel(
        w,
        h,
        image::Rgb([255, 255, 255]),
    ));
    let b = map.budget;
    let span = f64::from(b.memory_end.saturating_sub(b.memory_base).max(1));
    let moments = map.moments.len();

    let peaks: Vec<u64> = map
        .tiles
        .iter()
        .map(|t| t.peak(moments).live_bytes)
        .collect();
    let over = peaks
        .iter()
        .filter(|&&p| p + b.support_reserve > b.tile_bytes)
        .count();
    let peak = map.peak_tile();
    text(&mut c, &map.title, LEFT as i32, 20, INK, true);
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
    text(&mut c, &summary, LEFT as i32, 38, MUTED, false);

    for (k, (tile, index)) in tiles.iter().enumerate() {
        let k = k as u32;
        let (row, col) = (k / TILES_PER_ROW, k % TILES_PER_ROW);
        let x = (LEFT + col * COLUMN_W) as i32;
        let top = (TOP + row * (BAND_H + ROW_GAP)) as i32;
        if col == 0 {
            text(&mut c, &format!("{tile}"), 4, top + 8, MUTED, false);
            text(
                &mut c,
                &format!("{:#x}", b.memory_base),
                4,
                top + 20,
                HATCH,
                false,
            );
        }
        if col % 46 == 0 && col > 0 {
            text(&mut c, &format!("{tile}"), x, top - 3, MUTED, false);
        }
        let Some(i) = index else {
            rect(&mut c, x, top, COLUMN_W - 1, BAND_H, UNUSED);
            continue;
        };
        rect(&mut c, x, top, COLUMN_W - 1, BAND_H, FREE);
        let t = &map.tiles[*i];
        // First occupants only: sort by first moment, skip what overlaps an
        // address range already drawn.
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
            let y0 = (start.saturating_sub(u64::from(b.memory_base)) as f64 / span
                * f64::from(BAND_H)) as i32;
            let y1 = (end.saturating_sub(u64::from(b.memory_base)) as f64 / span
                * f64::from(BAND_H))
            .ceil() as i32;
            let hh = (y1 - y0).max(1) as u32;
            rect(&mut c, x, top + y0, COLUMN_W - 1, hh, class_rgb(a.class));
        }
        if peaks[*i] + b.support_reserve > b.tile_bytes {
            rect(&mut c, x, top - 6, COLUMN_W - 1, 4, RED);
        }
    }
    // Legend.
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
        rect(&mut c, lx - 1, ly - 9, 14, 12, HATCH);
        rect(&mut c, lx, ly - 8, 12, 10, color);
        text(&mut c, &name, lx + 16, ly, INK, false);
        lx += 16 + 6 * name.len() as i32 + 18;
    }
    text(
        &mut c,
        "each column is one tile, logical ids: SRAM address top to bottom; reused addresses drawn once (first occupant)",
        LEFT as i32,
        ly + 16,
        MUTED,
        false,
    );

    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(c.0)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .context("encoding memory.png")?;
    Ok(out)
}

/// Writes [`render`]'s PNG to `path`.
pub fn write(path: &Path, map: &MemoryMap) -> Result<()> {
    let png = render(map)?;
    std::fs::write(path, png).with_context(|| format!("writing {}", path.display()))
}
