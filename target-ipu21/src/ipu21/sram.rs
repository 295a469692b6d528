//! Tile SRAM map and per-tile memory budget of the IPU21 (C600).

/// First byte of tile SRAM (`docs/facts/ipu21-target.md` §1.2, `TILE_MEMORY_BASE`).
pub const TILE_MEMORY_BASE: u32 = 0x4C000;

/// Bytes of SRAM per tile, 624 KiB (`docs/facts/ipu21-target.md` §1.2, `TILE_MEMORY_SIZE`).
pub const TILE_MEMORY_SIZE: u32 = 0x9C000;

/// One past the last SRAM byte (`docs/facts/ipu21-target.md` §1.2).
pub const TILE_MEMORY_END: u32 = TILE_MEMORY_BASE + TILE_MEMORY_SIZE;

/// Instructions can only be fetched below this address (region 0)
/// (`docs/facts/ipu21-target.md` §1.2, `IPU21_EXECUTABLE_MEMORY_LIMIT`).
pub const EXECUTABLE_MEMORY_LIMIT: u32 = 0x80000;

/// The secondary loader cannot initialise bytes at or above this address
/// (`docs/facts/ipu21-target.md` §1.2, 0x4C010 + 643 frames × 992 bytes).
pub const LOADER_REACHABLE_LIMIT: u32 = 0xE7BB0;

/// Load and entry address of every tile image (`docs/facts/ipu21-target.md` §1.2,
/// `APPLICATION_LOAD_BASE`).
pub const APPLICATION_LOAD_BASE: u32 = 0x4C010;

/// Tile clock assumed for simulated milliseconds (`docs/facts/ipu21-target.md` §1.4).
pub const CLOCK_HZ: u64 = 1_500_000_000;

/// Per-tile bytes the planner may use, *including* the support reserve below
/// (`docs/facts/seed-vit-repeat-evaluation.txt`, "tile budget is 586960 bytes").
pub const TILE_MEMORY_BUDGET: u32 = 586_960;

/// The seeds' fixed package support reserve (runtime, code, state, worker
/// stacks) (`docs/facts/seed-vit-repeat-evaluation.txt`, "49152-byte
/// package support reserve"). ipuc charges code per tile instead
/// ([`code_charge_bytes`]); kept for the seeds' comparison tables.
pub const SUPPORT_RESERVE_BYTES: u32 = 49_152;

/// Bytes every tile charges against [`TILE_MEMORY_BUDGET`] whatever its
/// program: the runtime state block (`layout::STATE_BASE..layout::STATE_END`,
/// 1,760 bytes at the top of region 0). Code, exchange rows and kernel
/// argument blocks are charged per tile on top of it, as the whole elements
/// their linked image blocks ([`code_charge_bytes`]); the planner's data
/// budget is `TILE_MEMORY_BUDGET − SUPPORT_CHARGE_BYTES` and its per-tile
/// usage includes each tile's code charge, and placement charges the same
/// bytes for the reserved ranges, so the two compare the same quantity
/// (ipuc's layout choice, `layout` below).
pub const SUPPORT_CHARGE_BYTES: u32 = layout::STATE_END - layout::STATE_BASE;

/// Bytes charged for a tile whose linked image (runtime, kernel stubs,
/// supervisor program, argument blocks, exchange rows) is `image_bytes`
/// long from [`APPLICATION_LOAD_BASE`]: every effective element from
/// [`TILE_MEMORY_BASE`] up to and including the one holding the last byte
/// of the 64-byte fetch look-ahead past the image, because no data may share
/// an element with instruction fetch (`docs/facts/ipu21-target.md` §1.2,
/// §2.10 rules 2–3). `None` when the image cannot fit below the runtime
/// state's element (region 0 is the only executable region).
#[inline]
pub const fn code_charge_bytes(image_bytes: u32) -> Option<u32> {
    let Some(span) = code_span_bytes(image_bytes) else {
        return None;
    };
    Some(span.div_ceil(ELEMENT_SIZE) * ELEMENT_SIZE)
}

/// Bytes from [`TILE_MEMORY_BASE`] to the end of the 64-byte fetch
/// look-ahead past a linked image of `image_bytes` (the part of
/// [`code_charge_bytes`] the image itself blocks, before rounding up to
/// whole elements). `None` when the image cannot fit below the runtime
/// state's element.
#[inline]
pub const fn code_span_bytes(image_bytes: u32) -> Option<u32> {
    let Some(end) = APPLICATION_LOAD_BASE.checked_add(image_bytes) else {
        return None;
    };
    let Some(guarded) = end.checked_add(SUPERVISOR_FETCH_LOOKAHEAD) else {
        return None;
    };
    if guarded > layout::CODE_LIMIT {
        return None;
    }
    Some(guarded - TILE_MEMORY_BASE)
}

/// The longest linked image any tile may have: it ends, with its fetch
/// look-ahead guard, below the element holding the runtime state block.
pub const MAX_IMAGE_BYTES: u32 =
    layout::CODE_LIMIT - SUPERVISOR_FETCH_LOOKAHEAD - APPLICATION_LOAD_BASE;

/// Physical memory element size (16 KiB) (`docs/facts/ipu21-target.md` §1.2, `TMEM_ELEMSIZE`).
pub const ELEMENT_SIZE: u32 = 0x4000;

/// Start of the interleaved region 1 (`docs/facts/ipu21-target.md` §1.2).
pub const INTERLEAVED_BASE: u32 = 0x80000;

/// Effective element size in the interleaved region, two physical elements
/// (`docs/facts/ipu21-target.md` §1.2, `IPU21_INTERLEAVED_ELEMENT_SIZE`).
pub const INTERLEAVED_ELEMENT_SIZE: u32 = 0x8000;

/// Bytes of supervisor instruction look-ahead to keep clear of data placed
/// after code (`docs/facts/ipu21-target.md` §1.2, `IPU21_SUPERVISOR_FETCH_LOOKAHEAD`).
pub const SUPERVISOR_FETCH_LOOKAHEAD: u32 = 64;

/// Is `[addr, addr + len)` inside tile SRAM?
pub const fn in_sram(addr: u32, len: u32) -> bool {
    addr >= TILE_MEMORY_BASE
        && len <= TILE_MEMORY_SIZE
        && addr - TILE_MEMORY_BASE <= TILE_MEMORY_SIZE - len
}

/// Can an instruction word be fetched from `addr`? (inside SRAM, below the
/// executable limit, word aligned).
pub const fn is_executable(addr: u32) -> bool {
    addr >= TILE_MEMORY_BASE && addr < EXECUTABLE_MEMORY_LIMIT && addr.is_multiple_of(4)
}

/// Effective memory element of an SRAM address, numbered as ipu-stack does:
/// standard region `addr / 0x4000` (absolute, so region 0 is 19..=31),
/// interleaved region `(addr − 0x80000) / 0x8000` offset by 32 so the two
/// numberings never collide (`docs/facts/ipu21-target.md` §1.2).
pub const fn effective_element(addr: u32) -> u32 {
    if addr < INTERLEAVED_BASE {
        addr / ELEMENT_SIZE
    } else {
        32 + (addr - INTERLEAVED_BASE) / INTERLEAVED_ELEMENT_SIZE
    }
}

/// Which SRAM region class an allocation needs
/// (`docs/facts/ipu21-target.md` §1.2: region 0 standard, region 1 interleaved).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemoryClass {
    /// Anywhere (region 0, or region 1 when it has room).
    Standard,
    /// Region 1 (interleaved): AMP outputs and weights fed at 16 B/cycle.
    Interleaved,
}

/// Start alignment of AMP operands (GEMM/attention inputs and outputs) and
/// of interleaved-class buffers (`docs/facts/ipu21-target.md` §2.10 rule 6).
pub const AMP_BUFFER_ALIGN: u32 = 32;
/// Start alignment of every other buffer: exchange rows and local copies
/// move 8-byte aligned data (`docs/facts/ipu21-target.md` §2.7).
pub const BASE_BUFFER_ALIGN: u32 = 8;
/// The largest alignment lowering gives any buffer; the memory estimator
/// charges blocks rounded up to it, which bounds placement's span.
pub const MAX_BUFFER_ALIGN: u32 = if AMP_BUFFER_ALIGN > BASE_BUFFER_ALIGN {
    AMP_BUFFER_ALIGN
} else {
    BASE_BUFFER_ALIGN
};

/// ipuc's fixed per-tile layout of runtime state. These are layout *choices*
/// (not hardware facts): the state block is data (completion word, cycle
/// samples, supervisor stack, worker areas, the same offsets ipu-stack uses
/// from its base, `docs/facts/ipu21-target.md` §1.2, second table) and sits
/// at the very top of region 0, so code, exchange rows and data grow towards
/// it from the bottom of region 0 and region 1 (code never shares its
/// element, [`super::code_charge_bytes`]). `target-ipu21/device-asm/static_runtime.S`
/// receives the addresses as link-time symbols.
pub mod layout {
    use crate::ipu21::contexts::WORKERS_U32;

    /// Bytes of the state block: completion word, cycle samples, supervisor
    /// stack (0xE0 bytes with them) and six 0x100-byte worker areas.
    pub const STATE_BYTES: u32 = 0xE0 + WORKERS_U32 * WORKER_AREA_STRIDE;
    /// First byte of the state block (the completion word).
    pub const STATE_BASE: u32 = super::EXECUTABLE_MEMORY_LIMIT - STATE_BYTES;
    /// End (exclusive) of the state block: the end of region 0.
    pub const STATE_END: u32 = super::EXECUTABLE_MEMORY_LIMIT;
    /// Completion word: the runtime's completion routine stores 1 here.
    pub const COMPLETION_WORD: u32 = STATE_BASE;
    /// Linked code (runtime, program, exchange rows) plus its 64-byte fetch
    /// look-ahead ends at or below this address: the start of the element
    /// holding the state block, which code may not share (data only,
    /// `docs/facts/ipu21-target.md` §2.10 rules 2–3). Placement's data
    /// usually lowers the limit of a tile further.
    pub const CODE_LIMIT: u32 = STATE_BASE - STATE_BASE % super::ELEMENT_SIZE;
    /// Cycle-sample word written by timing wrappers before the timed code.
    pub const CYCLE_SAMPLE_START: u32 = STATE_BASE + 4;
    /// Cycle-sample word written by timing wrappers after the timed code.
    pub const CYCLE_SAMPLE_END: u32 = STATE_BASE + 8;
    /// Top (exclusive) of the supervisor stack; it grows down from here into
    /// the reserved block `STATE_BASE + 0x10 .. STATE_BASE + 0xE0` (208 bytes).
    pub const SUPERVISOR_STACK_TOP: u32 = STATE_BASE + 0xE0;
    /// Lowest address the supervisor stack may reach.
    pub const SUPERVISOR_STACK_LIMIT: u32 = STATE_BASE + 0x10;
    /// Base of worker 0's area; worker k's area is
    /// `WORKER_AREA + k·WORKER_AREA_STRIDE` (its `$WORKERk_BASE`). Word 0 of
    /// each area holds the worker identity word `(tile·8) | k` written at
    /// start-up.
    pub const WORKER_AREA: u32 = SUPERVISOR_STACK_TOP;
    /// Bytes per worker area (also that worker's stack).
    pub const WORKER_AREA_STRIDE: u32 = 0x100;

    // The layout is checked at compile time.
    const _: () = assert!(WORKER_AREA + WORKERS_U32 * WORKER_AREA_STRIDE == STATE_END);
    const _: () = assert!(SUPERVISOR_STACK_LIMIT > CYCLE_SAMPLE_END);
    const _: () = assert!(STATE_BASE.is_multiple_of(32));
    const _: () = assert!(CODE_LIMIT > super::APPLICATION_LOAD_BASE);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sram_bounds() {
        assert_eq!(TILE_MEMORY_END, 0xE_8000);
        assert!(in_sram(TILE_MEMORY_BASE, 4));
        assert!(in_sram(TILE_MEMORY_END - 4, 4));
        assert!(!in_sram(TILE_MEMORY_END - 2, 4));
        assert!(!in_sram(TILE_MEMORY_BASE - 4, 4));
        assert!(!in_sram(u32::MAX, 4));
        assert!(is_executable(APPLICATION_LOAD_BASE));
        assert!(!is_executable(EXECUTABLE_MEMORY_LIMIT));
        assert!(!is_executable(APPLICATION_LOAD_BASE + 2));
    }

    #[test]
    fn code_charge_counts_whole_elements_with_the_guard() {
        // Image ends 64 bytes before an element boundary: exactly that element.
        let one = ELEMENT_SIZE - 0x10 - SUPERVISOR_FETCH_LOOKAHEAD;
        assert_eq!(code_charge_bytes(one), Some(ELEMENT_SIZE));
        assert_eq!(code_charge_bytes(one + 4), Some(2 * ELEMENT_SIZE));
        assert_eq!(code_charge_bytes(0), Some(ELEMENT_SIZE));
        assert_eq!(
            code_charge_bytes(MAX_IMAGE_BYTES),
            Some(layout::CODE_LIMIT - TILE_MEMORY_BASE)
        );
        assert_eq!(code_charge_bytes(MAX_IMAGE_BYTES + 4), None);
        assert_eq!(code_charge_bytes(u32::MAX), None);
        assert_eq!(code_span_bytes(one), Some(ELEMENT_SIZE));
        assert_eq!(code_span_bytes(0), Some(16 + 64));
        assert_eq!(code_span_bytes(MAX_IMAGE_BYTES + 4), None);
        assert_eq!(layout::STATE_BASE, 0x7_F920);
        assert_eq!(SUPPORT_CHARGE_BYTES, 1760);
    }

    #[test]
    fn elements_match_facts() {
        assert_eq!(effective_element(0x4_C000), 19);
        assert_eq!(effective_element(0x7_FFFC), 31);
        assert_eq!(effective_element(0x8_0000), 32);
        assert_eq!(effective_element(0xE_7FFC), 32 + 12);
    }
}
