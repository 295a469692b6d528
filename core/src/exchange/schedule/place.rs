//! Placing a piece: marking the sender's and receivers' streams, controls
//! and windows busy.

use super::*;

/// Which ends of a piece its receivers' XPIC marks: a piece inside a
/// stream chain continues the stream before it (no select) or is
/// continued by the next (no tear-down).
#[derive(Clone, Copy)]
pub(super) struct StreamEnds {
    pub(super) select: bool,
    pub(super) teardown: bool,
}

impl StreamEnds {
    pub(super) const BOTH: StreamEnds = StreamEnds {
        select: true,
        teardown: true,
    };
}

#[allow(clippy::too_many_arguments)]
pub(super) fn place(
    tiles: &mut [TileState],
    t: &Transfer,
    receivers: &[Receiver],
    start: u64,
    len: u64,
    offset: u64,
    sweep: Option<(i64, u32)>,
    ends: StreamEnds,
) {
    let guard = u64::from(GUARD_EVENTS);
    let src = &mut tiles[t.source.index()];
    src.busy_out(start, start + len);
    src.mark(start, SEND_START);
    src.send_windows.insert(
        swept_mask(
            t.source_address + (offset as u32) * 4,
            (len as u32) * 4,
            sweep,
        ),
        start,
        start + len + guard,
    );
    for r in receivers {
        let rt = &mut tiles[r.tile.index()];
        let x = (start as i64 + r.offset) as u64;
        let p = x + r.lag;
        rt.busy_in(x, x + len);
        if ends.select {
            rt.mark(x, CONTROL | XPIC);
        }
        if ends.teardown {
            rt.mark(x + len, CONTROL | XPIC);
        }
        rt.mark(p, CONTROL | PIC);
        let dst = t.destinations[usize::from(r.index)].address + (offset as u32) * 4;
        rt.receive_windows
            .insert(element_mask(dst, (len as u32) * 4), p, p + len + guard);
    }
}
