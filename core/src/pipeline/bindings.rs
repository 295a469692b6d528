//! Package bindings: where the host writes inputs and weights and reads
//! outputs, as tile address ranges of each tensor's row-major bytes.
//!
//! A buffer block is a rectangle `rows × cols` of the tensor's 2-D view
//! (leading dims folded into rows) stored row-major on its tile; a block of
//! whole rows is one slice, a block of partial rows one slice per row.

use alloc::collections::BTreeMap;
use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;

use super::error::BindingError;

use crate::ir::{DType as IrType, Graph, ValueId};
use crate::lower::{Buffer, BufferRole, TileSchedule};
use crate::place::BufferAddresses;
use crate::plan::TileBlock;
use ipuc_target::numeric::F8Format;
use ipuc_target::package::{
    Binding, BindingKind, BindingSlice, DType, HostCall, HostTransfer, INFERENCE_CALL,
};

type Result<T> = core::result::Result<T, BindingError>;

/// The package dtype and FP8 scale of an IR dtype.
pub fn package_dtype(dtype: IrType) -> (DType, i8) {
    match dtype {
        IrType::F32 => (DType::F32, 0),
        IrType::F16 => (DType::F16, 0),
        IrType::F8 {
            format: F8Format::F143,
            scale,
        } => (DType::F8E4M3, scale),
        IrType::F8 {
            format: F8Format::F152,
            scale,
        } => (DType::F8E5M2, scale),
    }
}

/// Slices of one tile block at `base`, for a tensor whose 2-D view has
/// `cols` columns of `elem` bytes.
fn block_slices(block: &TileBlock, base: u32, cols: u32, elem: u32) -> Result<Vec<BindingSlice>> {
    // Package slices name physical tiles, like the tile images.
    let tile = u32::from(block.tile.physical().get());
    let width = block.cols.end - block.cols.start;
    let pitch = width * elem;
    if width == cols {
        let rows = block.rows.end - block.rows.start;
        return Ok(vec![BindingSlice {
            file_offset: u64::from(block.rows.start) * u64::from(cols * elem),
            tile,
            tile_address: base,
            size: rows * pitch,
        }]);
    }
    Ok(block
        .rows
        .clone()
        .enumerate()
        .map(|(i, r)| BindingSlice {
            file_offset: (u64::from(r) * u64::from(cols) + u64::from(block.cols.start))
                * u64::from(elem),
            tile,
            tile_address: base + i as u32 * pitch,
            size: pitch,
        })
        .collect())
}

/// One host-visible tensor held by a buffer.
struct Target<'a> {
    name: &'a str,
    kind: BindingKind,
    /// The tensor's full shape.
    shape: Vec<u64>,
    /// Columns of its 2-D view (the blocks' row pitch in elements).
    view_cols: u32,
    /// Which copy of an iterated buffer (0 otherwise).
    iteration: u32,
}

fn binding(
    target: Target<'_>,
    buffer: &Buffer,
    blocks: &[TileBlock],
    addrs: &dyn BufferAddresses,
) -> Result<Binding> {
    let Target {
        name,
        kind,
        shape: full_shape,
        view_cols,
        iteration,
    } = target;
    let (dtype, scale) = package_dtype(buffer.dtype);
    let elem = dtype.size_bytes() as u32;
    let mut slices = Vec::new();
    for block in blocks {
        let base = addrs
            .base(buffer.id, block.tile)
            .ok_or_else(|| BindingError::Unplaced {
                binding: name.to_string(),
                buffer: buffer.name.clone(),
                tile: block.tile,
            })?;
        // Iteration `i` of a sequence sits at `base + i × stride`: the same
        // address function the Repeat body reads (architecture invariant 3).
        let at = base + buffer.iteration_offset(block, iteration, 0);
        slices.extend(block_slices(block, at, view_cols, elem)?);
    }
    slices.sort();
    Ok(Binding {
        name: name.to_string(),
        kind,
        dtype,
        scale,
        shape: full_shape,
        slices,
    })
}

/// Every input and parameter of `graph` by name (one pass, so bindings
/// stay linear in the number of weights).
fn externals(graph: &Graph) -> BTreeMap<&str, ValueId> {
    graph
        .inputs()
        .chain(graph.parameters())
        .filter_map(|(_, op)| Some((op.kind().external_name()?, op.result()?)))
        .collect()
}

/// Full shape of a named input or parameter.
fn dims_of(graph: &Graph, externals: &BTreeMap<&str, ValueId>, name: &str) -> Option<Vec<u64>> {
    value_dims(graph, *externals.get(name)?)
}

/// Full shape of value `v`.
fn value_dims(graph: &Graph, v: ValueId) -> Option<Vec<u64>> {
    Some(
        graph
            .ty(v)?
            .shape
            .dims()
            .iter()
            .map(|&d| d as u64)
            .collect(),
    )
}

/// Every input, weight and output binding of the schedule.
pub fn bindings(
    graph: &Graph,
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
) -> Result<Vec<Binding>> {
    let mut out = Vec::new();
    let externals = externals(graph);
    for buffer in &schedule.buffers {
        let full_shape = |name: &str| {
            dims_of(graph, &externals, name)
                .unwrap_or_else(|| buffer.shape.iter().map(|&d| u64::from(d)).collect())
        };
        match &buffer.role {
            BufferRole::Input { name } | BufferRole::Parameter { name } => {
                let kind = match buffer.role {
                    BufferRole::Input { .. } => BindingKind::Input,
                    _ => BindingKind::Weight,
                };
                let target = Target {
                    name,
                    kind,
                    shape: full_shape(name),
                    view_cols: buffer.shape[1],
                    iteration: 0,
                };
                out.push(binding(target, buffer, &buffer.blocks, addrs)?);
            }
            BufferRole::Iterated { names } => {
                for (i, name) in names.iter().enumerate() {
                    let target = Target {
                        name,
                        kind: BindingKind::Weight,
                        shape: full_shape(name),
                        view_cols: buffer.shape[1],
                        iteration: i as u32,
                    };
                    out.push(binding(target, buffer, &buffer.blocks, addrs)?);
                }
            }
            BufferRole::Constant { op } => {
                return Err(BindingError::Constant {
                    buffer: buffer.name.clone(),
                    op: *op,
                })
            }
            BufferRole::Output { .. }
            | BufferRole::Carried
            | BufferRole::Activation
            | BufferRole::Scratch => {}
        }
    }
    for o in &schedule.outputs {
        let buffer =
            schedule
                .buffer(o.buffer)
                .ok_or_else(|| BindingError::MissingOutputBuffer {
                    output: o.name.clone(),
                })?;
        let dims = graph_output_dims(graph, &o.name)
            .unwrap_or_else(|| o.shape.iter().map(|&d| u64::from(d)).collect());
        let target = Target {
            name: &o.name,
            kind: BindingKind::Output,
            shape: dims,
            view_cols: o.shape[1],
            iteration: 0,
        };
        let mut b = binding(target, buffer, &o.blocks, addrs)?;
        let (dtype, scale) = package_dtype(o.dtype);
        b.dtype = dtype;
        b.scale = scale;
        out.push(b);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn graph_output_dims(graph: &Graph, name: &str) -> Option<Vec<u64>> {
    value_dims(graph, graph.output(name)?)
}

/// The package's host calls: one `inference` call that writes every input
/// binding whole before the program starts and reads every output binding
/// whole after it completes: two host rendezvous, done by the host as a
/// direct SRAM copy (no device-side host exchange;
/// docs/reports/architecture-notes-2026-12-03.md, "Host I/O"). Weights are not part of it: they are loaded once with the tile
/// images.
pub fn host_calls(bindings: &[Binding]) -> Result<Vec<HostCall>> {
    let whole = |kind: BindingKind| -> Result<Vec<HostTransfer>> {
        bindings
            .iter()
            .filter(|b| b.kind == kind)
            .map(|b| {
                Ok(HostTransfer {
                    binding: b.name.clone(),
                    file_offset: 0,
                    size: b.byte_size().ok_or_else(|| BindingError::SizeOverflow {
                        binding: b.name.clone(),
                    })?,
                })
            })
            .collect()
    };
    Ok(vec![HostCall {
        name: INFERENCE_CALL.into(),
        command: 1,
        phases: 2,
        invocations: 1,
        inputs: whole(BindingKind::Input)?,
        outputs: whole(BindingKind::Output)?,
    }])
}
