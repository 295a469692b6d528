//! Package → bytes. Canonical: collections are written in sorted order, so
//! the bytes depend only on the package's contents, never on the order the
//! emitter happened to produce them in.

use alloc::vec::Vec;

use super::error::Result;
use super::model::{Binding, HostCall, HostTransfer, Package, StepInfo, SummaryValue, TileImage};
use super::wire::ByteWriter;
use super::{Section, FORMAT_VERSION, MAGIC};

/// Encodes without validating; [`super::write`] validates the result.
pub fn encode(package: &Package) -> Result<Vec<u8>> {
    let mut w = ByteWriter::new();
    w.raw(&MAGIC);
    w.u16(FORMAT_VERSION);
    w.u16(0);
    section(&mut w, Section::Target, |w| target(w, package))?;
    section(&mut w, Section::Tiles, |w| tiles(w, package))?;
    section(&mut w, Section::Kernels, |w| kernels(w, package))?;
    section(&mut w, Section::Bindings, |w| bindings(w, package))?;
    section(&mut w, Section::HostCalls, |w| host_calls(w, package))?;
    section(&mut w, Section::Steps, |w| steps(w, package))?;
    section(&mut w, Section::PlanSummary, |w| plan_summary(w, package))?;
    section(&mut w, Section::Description, |w| {
        w.u16(package.description.version);
        w.raw(&package.description.body);
        Ok(())
    })?;
    Ok(w.into_bytes())
}

fn section(
    w: &mut ByteWriter,
    tag: Section,
    body: impl FnOnce(&mut ByteWriter) -> Result<()>,
) -> Result<()> {
    w.u32(tag as u32);
    let length_at = w.len();
    w.u64(0);
    let start = w.len();
    body(w)?;
    let length = (w.len() - start) as u64;
    w.patch_u64(length_at, length);
    Ok(())
}

fn target(w: &mut ByteWriter, p: &Package) -> Result<()> {
    w.string("producer", &p.producer)?;
    let t = &p.target;
    w.u32(t.tile_count);
    w.u32(t.tile_memory_base);
    w.u32(t.tile_memory_size);
    w.u32(t.executable_limit);
    w.u32(t.loader_limit);
    w.u64(t.clock_hz);
    Ok(())
}

fn tiles(w: &mut ByteWriter, p: &Package) -> Result<()> {
    let mut tiles: Vec<&TileImage> = p.tiles.iter().collect();
    tiles.sort_by_key(|t| t.physical_tile);
    w.len32("tile count", tiles.len())?;
    for tile in tiles {
        w.u32(tile.physical_tile);
        w.u32(tile.entry_point);
        let mut segments: Vec<_> = tile.segments.iter().collect();
        segments.sort_by_key(|s| (s.address, s.memory_size));
        w.len32("segment count", segments.len())?;
        for s in segments {
            w.u32(s.address);
            w.u32(s.memory_size);
            w.u8(s.flags.bits());
            w.u8(s.role.code());
            w.u16(0);
            w.blob("segment data", &s.data)?;
        }
    }
    Ok(())
}

fn kernels(w: &mut ByteWriter, p: &Package) -> Result<()> {
    let mut kernels: Vec<_> = p.kernels.iter().collect();
    kernels.sort_by(|a, b| a.name.cmp(&b.name));
    w.len32("kernel count", kernels.len())?;
    for k in kernels {
        w.string("kernel name", &k.name)?;
        w.u32(k.address);
    }
    Ok(())
}

fn bindings(w: &mut ByteWriter, p: &Package) -> Result<()> {
    let mut bindings: Vec<&Binding> = p.bindings.iter().collect();
    bindings.sort_by(|a, b| a.name.cmp(&b.name));
    w.len32("binding count", bindings.len())?;
    for b in bindings {
        w.u8(b.kind.code());
        w.u8(b.dtype.code());
        w.u8(b.scale as u8);
        w.u8(0);
        w.string("binding name", &b.name)?;
        w.len32("binding rank", b.shape.len())?;
        for &d in &b.shape {
            w.u64(d);
        }
        let mut slices = b.slices.clone();
        slices.sort();
        w.len32("slice count", slices.len())?;
        for s in slices {
            w.u64(s.file_offset);
            w.u32(s.tile);
            w.u32(s.tile_address);
            w.u32(s.size);
        }
    }
    Ok(())
}

fn host_calls(w: &mut ByteWriter, p: &Package) -> Result<()> {
    let mut calls: Vec<&HostCall> = p.host_calls.iter().collect();
    calls.sort_by(|a, b| a.name.cmp(&b.name));
    w.len32("host call count", calls.len())?;
    for c in calls {
        w.string("host call name", &c.name)?;
        w.u32(c.command);
        w.u32(c.phases);
        w.u32(c.invocations);
        // Transfer order is meaningful (the host stages them in this order).
        transfers(w, &c.inputs)?;
        transfers(w, &c.outputs)?;
    }
    Ok(())
}

fn transfers(w: &mut ByteWriter, list: &[HostTransfer]) -> Result<()> {
    w.len32("transfer count", list.len())?;
    for t in list {
        w.string("transfer binding", &t.binding)?;
        w.u64(t.file_offset);
        w.u64(t.size);
    }
    Ok(())
}

fn steps(w: &mut ByteWriter, p: &Package) -> Result<()> {
    let tables = &p.steps;
    w.len32("operation count", tables.operations.len())?;
    for op in &tables.operations {
        w.string("operation name", op)?;
    }
    let mut tiles: Vec<_> = tables.tiles.iter().collect();
    tiles.sort_by_key(|t| t.physical_tile);
    w.len32("step table count", tiles.len())?;
    for t in tiles {
        w.u32(t.physical_tile);
        let mut steps: Vec<&StepInfo> = t.steps.iter().collect();
        steps.sort_by_key(|s| s.step);
        w.len32("step count", steps.len())?;
        for s in steps {
            w.u32(s.step);
            w.u8(s.kind.code());
            w.u8(u8::from(s.repeat.is_some()));
            w.u16(0);
            w.u32(s.operation);
            w.u32(s.code_address);
            let (repeat, trips) = s.repeat.map_or((0, 0), |r| (r.repeat, r.trip_count));
            w.u32(repeat);
            w.u32(trips);
        }
    }
    Ok(())
}

fn plan_summary(w: &mut ByteWriter, p: &Package) -> Result<()> {
    // BTreeMap iteration is already sorted by key.
    w.len32("summary entry count", p.plan_summary.len())?;
    for (key, value) in &p.plan_summary {
        w.string("summary key", key)?;
        match value {
            SummaryValue::Text(s) => {
                w.u8(0);
                w.string("summary text", s)?;
            }
            SummaryValue::Integer(i) => {
                w.u8(1);
                w.u64(*i as u64);
            }
            SummaryValue::Real(x) => {
                w.u8(2);
                w.u64(x.to_bits());
            }
        }
    }
    Ok(())
}
