//! Receiver stepping (step 2 of the witness): each receiver event by event,
//! its mux taking items off the senders' wires and writing them through
//! the pointer in force.

use super::*;

/// The burst of `wire` driving event `x`.
pub(super) fn on_wire(wire: &[Burst], x: i64) -> Option<(Burst, u32)> {
    let x = u32::try_from(x).ok()?;
    let i = wire.partition_point(|b| b.start <= x).checked_sub(1)?;
    let b = wire[i];
    (x - b.start < b.items).then_some((b, x - b.start))
}

/// [`on_wire`], searching from burst `*near` on (where the last search of
/// this receiver ended: its events only grow, so the burst is usually that
/// one or the next) and leaving `*near` at the burst found.
pub(super) fn on_wire_near(wire: &[Burst], x: i64, near: &mut usize) -> Option<(Burst, u32)> {
    let x = u32::try_from(x).ok()?;
    let mut i = *near;
    if wire.get(i).is_none_or(|b| b.start > x) {
        i = wire.partition_point(|b| b.start <= x).checked_sub(1)?;
    } else {
        // wire[i] starts at or before x: the last such burst is ahead.
        let mut steps = 0;
        while wire.get(i + 1).is_some_and(|b| b.start <= x) {
            i += 1;
            steps += 1;
            if steps == 8 {
                i = wire.partition_point(|b| b.start <= x) - 1;
                break;
            }
        }
    }
    *near = i;
    let b = wire[i];
    (x - b.start < b.items).then_some((b, x - b.start))
}

/// Selection intervals `[from, to)` with their source, for the ordinary
/// or the paired XPIC stream of `controls`.
pub(super) fn selections(controls: &[(u32, Control)], paired: bool) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    let mut current: Option<(u32, u32)> = None;
    for &(e, c) in controls {
        let v = match (c, paired) {
            (Control::Xpic(v), false) | (Control::XpicPaired(v), true) => v,
            _ => continue,
        };
        if let Some((since, s)) = current.take() {
            if since < e {
                out.push((since, e, s));
            }
        }
        if v != XPIC_NEUTRAL {
            current = Some((e, v));
        }
    }
    if let Some((since, s)) = current {
        out.push((since, u32::MAX, s));
    }
    out
}

/// Items taken by a receiver's mux at consecutive events, waiting for their
/// memory writes: item `i` was taken at `mux + i`, is written at
/// `write + i` and came from `item`'s address + `i` items, read at its
/// read event + `i`.
#[derive(Clone, Copy)]
pub(super) struct InFlight {
    pub(super) write: u32,
    pub(super) mux: u32,
    pub(super) source: PhysicalTile,
    /// (source byte address, read event) of the first item, or `None`:
    /// nothing was on the route.
    pub(super) item: Option<(u32, u32)>,
    /// 64-bit items: route direction the PIC format must show; 0 for 32-bit.
    pub(super) format: u32,
    /// Items (at least 1).
    pub(super) count: u32,
}

impl InFlight {
    pub(super) fn item_bytes(&self) -> u32 {
        if self.format == 0 {
            4
        } else {
            8
        }
    }

    /// Drops the first `n` (< `count`) items.
    pub(super) fn skip(&mut self, n: u32) {
        let bytes = self.item_bytes();
        self.count -= n;
        self.write += n;
        self.mux += n;
        self.item = self
            .item
            .map(|(b, r)| (b.wrapping_add(n.wrapping_mul(bytes)), r + n));
    }
}

/// Queues `next` behind `pending`, extending the last entry when `next`
/// continues it item for item (same source and width, next events, next
/// source address and read event, or nothing on the route for both).
pub(super) fn push_in_flight(pending: &mut VecDeque<InFlight>, next: InFlight) {
    if let Some(last) = pending.back_mut() {
        let n = last.count;
        let continues = last.source == next.source
            && last.format == next.format
            && last.mux.checked_add(n) == Some(next.mux)
            && last.write.checked_add(n) == Some(next.write)
            && match (last.item, next.item) {
                (None, None) => true,
                (Some((b, r)), Some((nb, nr))) => {
                    u64::from(b) + u64::from(n) * u64::from(last.item_bytes()) == u64::from(nb)
                        && r.checked_add(n) == Some(nr)
                }
                _ => false,
            };
        if continues {
            last.count += next.count;
            return;
        }
    }
    pending.push_back(next);
}

/// Takes the first item of the queue's first entry.
pub(super) fn pop_item(pending: &mut VecDeque<InFlight>) -> Option<InFlight> {
    let first = pending.front_mut()?;
    let one = InFlight { count: 1, ..*first };
    if first.count == 1 {
        pending.pop_front();
    } else {
        first.skip(1);
    }
    Some(one)
}

/// Steps one receiver event by event (step 2 of the module doc); with
/// `batch`, stretches of steady events in bulk ([`steady_events`]), with
/// the same result.
pub(super) fn receive(
    t: &Tile,
    own_paired: &[(u32, u32, u32)],
    partner_paired: &[(u32, u32, u32)],
    tiles: &[Tile],
    at: &[Option<usize>],
    batch: bool,
    moves: &mut Vec<MoveRun>,
) -> Result<(), WitnessFault> {
    let d = t.row.location.tile;
    let r = Receiver {
        t,
        own_paired,
        partner_paired,
        tiles,
        at,
        d,
        partner: d.pair_partner(),
        end: t.row.events,
        lag: pic_lag(d),
    };
    let mut s = Scan {
        xpic: XPIC_NEUTRAL,
        pointer: None,
        formats: Vec::new(),
        pending: VecDeque::new(),
        ci: 0,
        own_i: 0,
        their_i: 0,
        route: None,
        near: 0,
    };
    let mut e = 0u32;
    loop {
        let (own, theirs) = r.take_effect(&mut s, e);
        // The mux at e (the row's own events only).
        if e < r.end {
            r.mux(&mut s, e, own, theirs)?;
        }
        // Memory writes at e.
        write_due(
            d,
            e,
            r.end,
            &mut s.pending,
            &mut s.pointer,
            &s.formats,
            moves,
        )?;
        if batch && own.is_none() && theirs.is_none() {
            e = r.take_steady_stretch(&mut s, e, moves);
        }
        let selected = s.xpic != XPIC_NEUTRAL || own.is_some() || theirs.is_some();
        let Some(next) = r.next_event(&s, e, selected) else {
            break;
        };
        e = next;
    }
    check_return(
        d,
        r.end,
        &s.pending,
        s.pointer,
        s.xpic,
        own_paired,
        partner_paired,
        &s.formats,
    )
}

/// The receiver [`receive`] steps: its tile and row, the paired
/// selections (start, end, source) of it and of its partner, and where
/// each source's wire is.
struct Receiver<'a> {
    t: &'a Tile,
    own_paired: &'a [(u32, u32, u32)],
    partner_paired: &'a [(u32, u32, u32)],
    tiles: &'a [Tile],
    at: &'a [Option<usize>],
    d: PhysicalTile,
    partner: PhysicalTile,
    /// The row's return event.
    end: u32,
    /// Events from the mux to the memory write (`pic_lag`).
    lag: u32,
}

/// What the scan carries from event to event.
struct Scan {
    /// The ordinary stream's source (`XPIC_NEUTRAL`: none).
    xpic: u32,
    pointer: Option<u64>,
    /// PIC formats by the event they took effect at.
    formats: Vec<(u32, u32)>,
    pending: VecDeque<InFlight>,
    /// The next control, own and partner paired selection not yet passed.
    ci: usize,
    own_i: usize,
    their_i: usize,
    /// The selected source's route facts (source value, tile, `T(s,d)`,
    /// route bit), computed once per selection rather than once per event.
    route: Option<(u32, PhysicalTile, i32, u32)>,
    /// Where the last wire search ended (see `on_wire_near`).
    near: usize,
}

/// A paired selection: start event, end event, source value.
type Paired = (u32, u32, u32);

impl<'a> Receiver<'a> {
    fn fault(&self, event: u32, address: Option<u32>, kind: WitnessFaultKind) -> WitnessFault {
        WitnessFault {
            tile: self.d,
            event,
            address,
            kind,
        }
    }

    fn source_tile(&self, e: u32, v: u32) -> Result<PhysicalTile, WitnessFault> {
        PhysicalTile::new(v)
            .map_err(|_| self.fault(e, None, WitnessFaultKind::BadSource { source: v }))
    }

    fn wire_of(&self, s: PhysicalTile) -> &'a [Burst] {
        self.at[s.index()].map_or(&[][..], |j| self.tiles[j].wire.as_slice())
    }

    /// The controls taking effect at `e`, then the paired selections (of
    /// this tile and of its partner) in force at `e`, if any.
    fn take_effect(&self, s: &mut Scan, e: u32) -> (Option<&'a Paired>, Option<&'a Paired>) {
        while let Some(&(ce, c)) = self.t.controls.get(s.ci) {
            if ce != e {
                break;
            }
            match c {
                Control::Xpic(v) => s.xpic = v,
                Control::XpicPaired(_) => {} // tracked as `own_paired` intervals
                Control::Pointer(p) => s.pointer = Some(p),
                Control::Format(f) => s.formats.push((e, f)),
            }
            s.ci += 1;
        }
        while self.own_paired.get(s.own_i).is_some_and(|p| p.1 <= e) {
            s.own_i += 1;
        }
        while self.partner_paired.get(s.their_i).is_some_and(|p| p.1 <= e) {
            s.their_i += 1;
        }
        let own = self.own_paired.get(s.own_i).filter(|p| p.0 <= e);
        let theirs = self.partner_paired.get(s.their_i).filter(|p| p.0 <= e);
        (own, theirs)
    }

    /// What the mux takes at `e`: at most one stream may be selected, the
    /// ordinary one or a paired one (this tile's or its partner's); the
    /// item it reads off the source's wire goes in flight.
    fn mux(
        &self,
        s: &mut Scan,
        e: u32,
        own: Option<&Paired>,
        theirs: Option<&Paired>,
    ) -> Result<(), WitnessFault> {
        let streams = usize::from(s.xpic != XPIC_NEUTRAL)
            + usize::from(own.is_some())
            + usize::from(theirs.is_some());
        if streams > 1 {
            return Err(self.fault(e, None, WitnessFaultKind::PairedStreams));
        }
        if s.xpic != XPIC_NEUTRAL {
            self.take_ordinary(s, e)
        } else if let Some(&(_, _, v)) = own.or(theirs) {
            let owner = if own.is_some() { self.d } else { self.partner };
            self.take_paired(s, e, v ^ u32::from(owner.get() & 2))
        } else {
            Ok(())
        }
    }

    /// The ordinary stream: a 32-bit item of a burst the source drives on
    /// this route, not paired.
    fn take_ordinary(&self, s: &mut Scan, e: u32) -> Result<(), WitnessFault> {
        let (src, tm, bit) = match s.route {
            Some(r) if r.0 == s.xpic => (r.1, r.2, r.3),
            _ => {
                let src = self.source_tile(e, s.xpic)?;
                let r = (
                    s.xpic,
                    src,
                    mux_time(src, self.d),
                    u32::from(direction(src, self.d).sctl_bit()),
                );
                s.route = Some(r);
                (src, r.2, r.3)
            }
        };
        let x = i64::from(e) - i64::from(tm) - 1;
        let item = on_wire_near(self.wire_of(src), x, &mut s.near)
            .filter(|(b, _)| b.sctl & bit != 0 && b.sctl & SCTL_PAIRED == 0)
            .map(|(b, k)| (b.first_byte.wrapping_add(4 * k), x as u32));
        push_in_flight(
            &mut s.pending,
            InFlight {
                write: e.saturating_add(self.lag),
                mux: e,
                source: src,
                item,
                format: 0,
                count: 1,
            },
        );
        Ok(())
    }

    /// A paired stream from source value `v`: a 64-bit item of a paired
    /// burst, timed by the later of the pair's two routes, written one
    /// event later than an ordinary item.
    fn take_paired(&self, s: &mut Scan, e: u32, v: u32) -> Result<(), WitnessFault> {
        let src = self.source_tile(e, v)?;
        let tm = mux_time(src, self.d).max(mux_time(src, self.partner));
        let x = i64::from(e) - i64::from(tm) - 1;
        let bit = u32::from(direction(src, self.d).sctl_bit());
        let item = on_wire(self.wire_of(src), x)
            .filter(|(b, _)| b.sctl & bit != 0 && b.sctl & SCTL_PAIRED != 0)
            .map(|(b, k)| (b.first_byte.wrapping_add(8 * k), x as u32));
        push_in_flight(
            &mut s.pending,
            InFlight {
                write: e.saturating_add(self.lag + 1),
                mux: e,
                source: src,
                item,
                format: bit,
                count: 1,
            },
        );
        Ok(())
    }

    /// The events after `e` at which nothing but one steady stream
    /// happens, in bulk (see `steady_events`): exactly what stepping them
    /// one by one would do, many at a time. Returns the last event taken.
    fn take_steady_stretch(&self, s: &mut Scan, e: u32, moves: &mut Vec<MoveRun>) -> u32 {
        let mut state = Steady {
            e,
            end: self.end,
            lag: self.lag,
            xpic: s.xpic,
            route: s.route,
            near: s.near,
            pointer: s.pointer,
            next_control: self.t.controls.get(s.ci).map(|c| c.0),
            next_paired: [
                self.own_paired.get(s.own_i),
                self.partner_paired.get(s.their_i),
            ]
            .into_iter()
            .flatten()
            .map(|p| p.0)
            .min(),
            format_shown: s.formats.last().map_or(0, |f| f.1),
        };
        while let Some(run) = steady_events(&mut state, &s.pending, self.tiles, self.at) {
            take_steady(&mut state, run, self.d, &mut s.pending, moves);
        }
        s.pointer = state.pointer;
        s.near = state.near;
        state.e
    }

    /// The next event anything happens at after `e` (the next while a
    /// stream is selected, a control, a write due, a paired selection's
    /// start, the return); `None` when nothing is left, or past the
    /// return when only in-flight items are left (each an overrun).
    fn next_event(&self, s: &Scan, e: u32, selected: bool) -> Option<u32> {
        let end = self.end;
        let mut next = if selected && e < end { e + 1 } else { u32::MAX };
        if let Some(&(ce, _)) = self.t.controls.get(s.ci) {
            next = next.min(ce);
        }
        if let Some(p) = s.pending.front() {
            next = next.min(p.write);
        }
        for p in [
            self.own_paired.get(s.own_i),
            self.partner_paired.get(s.their_i),
        ]
        .into_iter()
        .flatten()
        {
            if p.0 > e {
                next = next.min(p.0);
            }
        }
        if e < end {
            next = next.min(end);
        }
        if next == u32::MAX || next <= e {
            return None;
        }
        if next > end && self.t.controls.get(s.ci).is_none_or(|c| c.0 > end) {
            return None;
        }
        Some(next)
    }
}

/// The items in flight whose write is due at event `e` of receiver `d`
/// (whose row returns at `end`): each checked (a source on the route, a
/// pointer inside memory, one write per event, the format shown, 64-bit
/// alignment, before the return) and written through `pointer`, which then
/// advances.
fn write_due(
    d: PhysicalTile,
    e: u32,
    end: u32,
    pending: &mut VecDeque<InFlight>,
    pointer: &mut Option<u64>,
    formats: &[(u32, u32)],
    moves: &mut Vec<MoveRun>,
) -> Result<(), WitnessFault> {
    let fault = |event: u32, address: Option<u32>, kind| WitnessFault {
        tile: d,
        event,
        address,
        kind,
    };
    let mut wrote_at_e = false;
    while pending.front().is_some_and(|p| p.write == e) {
        let Some(p) = pop_item(pending) else {
            break;
        };
        let address = pointer.and_then(|a| u32::try_from(a).ok());
        let Some((src_byte, read_event)) = p.item else {
            return Err(WitnessFault {
                tile: d,
                event: p.mux,
                address,
                kind: WitnessFaultKind::NothingOnRoute {
                    source: p.source,
                    paired: p.format != 0,
                },
            });
        };
        let words: u32 = if p.format == 0 { 1 } else { 2 };
        let Some(a) = *pointer else {
            return Err(fault(e, None, WitnessFaultKind::NoPointer));
        };
        if a < u64::from(TILE_MEMORY_BASE) || a + 4 * u64::from(words) > u64::from(TILE_MEMORY_END)
        {
            return Err(fault(e, address, WitnessFaultKind::OutsideMemory));
        }
        let a = a as u32;
        if wrote_at_e {
            return Err(fault(e, Some(a), WitnessFaultKind::TwoWritesOneEvent));
        }
        wrote_at_e = true;
        let shown = format_shown(formats, e, p.format);
        if shown != p.format {
            return Err(fault(
                e,
                Some(a),
                WitnessFaultKind::FormatMismatch {
                    expected: p.format,
                    shown,
                },
            ));
        }
        if p.format != 0 && !a.is_multiple_of(8) {
            return Err(fault(e, Some(a), WitnessFaultKind::PairedMisaligned));
        }
        if u64::from(e) + u64::from(GUARD_EVENTS) >= u64::from(end) {
            return Err(fault(e, Some(a), WitnessFaultKind::WriteAfterReturn));
        }
        push_run(
            moves,
            MoveRun {
                dst_tile: d,
                dst_word: a / 4,
                src_tile: p.source,
                src_word: src_byte / 4,
                read_event,
                write_event: e,
                words,
                per_event: words,
            },
        );
        *pointer = Some(u64::from(a) + 4 * u64::from(words));
    }
    Ok(())
}

/// At the return of receiver `d`'s row (event `end`): nothing may be in
/// flight, still selected or attached, and the 64-bit format must be off
/// long enough before it.
#[allow(clippy::too_many_arguments)]
fn check_return(
    d: PhysicalTile,
    end: u32,
    pending: &VecDeque<InFlight>,
    pointer: Option<u64>,
    xpic: u32,
    own_paired: &[(u32, u32, u32)],
    partner_paired: &[(u32, u32, u32)],
    formats: &[(u32, u32)],
) -> Result<(), WitnessFault> {
    let fault = |event: u32, address: Option<u32>, kind| WitnessFault {
        tile: d,
        event,
        address,
        kind,
    };
    // Nothing may be in flight or attached.
    if let Some(p) = pending.iter().find(|p| p.item.is_none()) {
        return Err(WitnessFault {
            tile: d,
            event: p.mux,
            address: pointer.and_then(|a| u32::try_from(a).ok()),
            kind: WitnessFaultKind::NothingOnRoute {
                source: p.source,
                paired: p.format != 0,
            },
        });
    }
    if let Some(p) = pending.front() {
        return Err(fault(
            p.write,
            pointer.and_then(|a| u32::try_from(a).ok()),
            WitnessFaultKind::WriteAfterReturn,
        ));
    }
    if xpic != XPIC_NEUTRAL {
        return Err(fault(
            end,
            None,
            WitnessFaultKind::StillAttached { source: xpic },
        ));
    }
    if let Some(s) = own_paired.last().filter(|s| s.1 == u32::MAX) {
        return Err(fault(
            end,
            None,
            WitnessFaultKind::StillAttached { source: s.2 },
        ));
    }
    // The partner's paired stream feeds this tile too: it must be over
    // before this tile's row returns.
    if let Some(s) = partner_paired.iter().find(|s| s.1 > end) {
        return Err(fault(
            end,
            None,
            WitnessFaultKind::StillAttached { source: s.2 },
        ));
    }
    if let Some(&(event, f)) = formats.last() {
        if f != 0 || event.saturating_add(PAIRED_ROW_TAIL_EVENTS) > end {
            return Err(fault(event, None, WitnessFaultKind::FormatLeftOn));
        }
    }
    Ok(())
}

/// The format a receiver shows for an item of `format` written at event
/// `e`: 32-bit words need the format off at the write; a 64-bit item needs
/// the route direction two events before it (§2.6).
fn format_shown(formats: &[(u32, u32)], e: u32, format: u32) -> u32 {
    let probe = if format == 0 { e } else { e.saturating_sub(2) };
    formats
        .iter()
        .rev()
        .find(|f| f.0 <= probe)
        .map_or(0, |f| f.1)
}
