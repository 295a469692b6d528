// ipuc static runtime for the IPU21 (Graphcore C600 tiles).
//
// Linked into every tile image. ipuc assembles this file with its own
// assembler (ipuc_core::target::asm) when it builds an image; no binary is
// committed. The syntax is the SDK assembler's, and only instructions whose
// encodings are documented in docs/facts/ipu21-target.md §3 are used.
//
// Symbols the linker must define (ipuc takes them from
// ipuc_core::target::memory::layout and the image builder):
//   ipuc_program               address of the generated supervisor program
//   ipuc_completion_word       word set to 1 by ipuc_static_complete
//   ipuc_supervisor_stack_top  initial $m11 (stack grows down, 8-byte frames)
//   ipuc_worker_area           $WORKER0_BASE; worker k uses +k*0x100
//
// Register conventions (docs/facts/ipu21-target.md §1.5):
//   $m15  reads as zero ($mzero)
//   $m11  supervisor stack pointer
//   $m9   link register of the patchers, $m10 of sample_cycle, $m7 of the
//         worker barrier
//   workers start with $m12 = $WORKERk_BASE and $m13 = the runall vertex
//   base ($mvertex_base); they find their index in $WSR bits 2:0.
//
// Entry points and their ABI (inputs -> effect; clobbers; return):
//
//   ipuc_static_start          tile entry after loading. sync INTERNAL,
//                              sync LOCAL; $INCOMING_MUX = 0x640 (neutral);
//                              $OUTGOING_BASE = 0; $WORKERk_BASE; $m11 =
//                              stack top; runs ipuc_worker_init on all six
//                              workers and joins them; jumps to ipuc_program.
//   ipuc_patch_word            Repeat word patcher. $m2 = address of the row
//                              word, $m3 = table of per-iteration words,
//                              $m4 = remaining iterations (the Repeat counter
//                              slot), $m5 = total iterations ->
//                              [$m2] = $m3[$m5 - $m4].
//                              Clobbers $m0. Returns via br $m9.
//   ipuc_patch_row             row-sharing patcher (dispatcher): $m2 = row
//                              base, $m3 = table of byte offsets, $m4 = table
//                              of replacement words, $m5 = entry count
//                              (0 allowed) -> [$m2 + $m3[k]] = $m4[k] for
//                              every k. Scalar loop below
//                              ipuc_bulk_patch_min_words entries (linked from
//                              ipu21::timing::PATCH_BULK_THRESHOLD_WORDS,
//                              its one definition), six workers from
//                              there on. Clobbers $m0, $m1,
//                              $m5..$m8. Returns via br $m9.
//   ipuc_patch_row_scalar      same ABI; always the supervisor loop (five
//                              instructions per entry).
//   ipuc_patch_row_workers     same ABI; always the six workers (worker k
//                              patches entries k, k+6, ...); the supervisor
//                              joins them with sync LOCAL before returning.
//                              Uses a 16-byte frame below $m11. Counts of
//                              0x7fff or more fall back to the scalar loop
//                              (the workers' division by 6 is exact below).
//   ipuc_sample_cycle          $m2 = destination word; worker 0 stores its
//                              $COUNT_L there. Clobbers $m0. Returns via
//                              br $m10.
//   ipuc_worker_barrier        runs an empty worker body on all workers and
//                              joins them, so no worker runs afterwards.
//                              Clobbers $m0. Returns via br $m7.
//   ipuc_static_complete       [ipuc_completion_word] = 1, then branch to
//                              address 0: the supervisor halts.

        .text

// ---------------------------------------------------------------------------
// Start-up (supervisor)

        .supervisor
        .globl ipuc_static_start
        .type ipuc_static_start, @function
        .p2align 3
ipuc_static_start:
        sync SYNCZONE_INTERNAL          // every tile is loaded
        sync SYNCZONE_LOCAL             // no worker still retiring from the loader
        setzi $m0, 0x640                // neutral receive mux: no sender selected
        put $INCOMING_MUX, $m0
        put $OUTGOING_BASE, $m15        // send addresses are absolute
        setzi $m0, ipuc_worker_area
        put $WORKER0_BASE, $m0
        add $m0, $m0, 0x100
        put $WORKER1_BASE, $m0
        add $m0, $m0, 0x100
        put $WORKER2_BASE, $m0
        add $m0, $m0, 0x100
        put $WORKER3_BASE, $m0
        add $m0, $m0, 0x100
        put $WORKER4_BASE, $m0
        add $m0, $m0, 0x100
        put $WORKER5_BASE, $m0
        setzi $m11, ipuc_supervisor_stack_top
        get $m1, $TILE_ID
        shl $m1, $m1, 3                 // workers receive tile*8 as vertex base
        setzi $m0, ipuc_worker_init
        runall $m0, $m1, 0
        sync SYNCZONE_LOCAL             // join the initialisers
        setzi $m0, ipuc_program
        br $m0
        .size ipuc_static_start, .-ipuc_static_start

// Worker initialiser: identity word (tile*8) | index into the worker's area
// word 0 and worker CSR 0x07 (the "worker sync context" value ipu-stack
// writes, docs/facts/ipu21-target.md §1.6/§5.1).
        .worker
        .type ipuc_worker_init, @function
        .p2align 3
ipuc_worker_init:
        get $m0, $WSR
        and $m0, $m0, 7                 // CTXTID_M1: this worker's index
        or $m1, $m13, $m0               // (tile*8) | index
        st32 $m1, $m12, $m15, 0
        put 7, $m1
        exitz $m15
        .size ipuc_worker_init, .-ipuc_worker_init

// ---------------------------------------------------------------------------
// Repeat word patcher (supervisor): [$m2] = $m3[$m5 - $m4]

        .supervisor
        .globl ipuc_patch_word
        .type ipuc_patch_word, @function
        .p2align 3
ipuc_patch_word:
        sub $m0, 0, $m4                 // -remaining
        add $m0, $m5, $m0               // iteration = total - remaining
        shl $m0, $m0, 2
        ld32 $m0, $m3, $m0, 0
        st32 $m0, $m2, $m15, 0
        br $m9
        .size ipuc_patch_word, .-ipuc_patch_word

// ---------------------------------------------------------------------------
// Row-sharing patcher: dispatcher, scalar loop, six-worker bulk path.

        .globl ipuc_patch_row
        .type ipuc_patch_row, @function
        .p2align 3
ipuc_patch_row:
        cmpult $m0, $m5, ipuc_bulk_patch_min_words // below it the workers do not pay
        brnz $m0, ipuc_patch_row_scalar
        bri ipuc_patch_row_workers
        .size ipuc_patch_row, .-ipuc_patch_row

        .globl ipuc_patch_row_scalar
        .type ipuc_patch_row_scalar, @function
        .p2align 3
ipuc_patch_row_scalar:
        brz $m5, .Lscalar_done          // count 0: nothing to patch
        add $m5, $m5, -1                // brnzdec runs count times from count-1
        zero $m6                        // byte index into both tables
.Lscalar_loop:
        ld32 $m7, $m3, $m6, 0           // byte offset of the word in the row
        ld32 $m8, $m4, $m6, 0           // replacement word
        st32 $m8, $m2, $m7, 0
        add $m6, $m6, 4
        brnzdec $m5, .Lscalar_loop
.Lscalar_done:
        br $m9
        .size ipuc_patch_row_scalar, .-ipuc_patch_row_scalar

        .globl ipuc_patch_row_workers
        .type ipuc_patch_row_workers, @function
        .p2align 3
ipuc_patch_row_workers:
        cmpult $m0, $m5, 0x7fff         // the workers divide count+5 by 6 with a
        brz $m0, ipuc_patch_row_scalar  // reciprocal that is exact below 2^16
        add $m11, $m11, -16             // argument frame for the workers
        st32 $m2, $m11, $m15, 0
        st32 $m3, $m11, $m15, 1
        st32 $m4, $m11, $m15, 2
        st32 $m5, $m11, $m15, 3
        setzi $m0, ipuc_patch_row_worker
        runall $m0, $m11, 0
        sync SYNCZONE_LOCAL             // wait for every worker's exitz
        add $m11, $m11, 16
        br $m9
        .size ipuc_patch_row_workers, .-ipuc_patch_row_workers

// Worker k patches entries k, k+6, k+12, ... of the frame at $m13:
// [0] row base, [1] offsets table, [2] values table, [3] count.
// Its share is floor((count + 5 - k) / 6), computed as
// (x * 0xaaab) >> 18, exact for x < 2^16 (x * 0xaaab by shifts and adds:
// 0xaaab = 2 * 5 * 0x11 * 0x101 + 1).
        .worker
        .type ipuc_patch_row_worker, @function
        .p2align 3
ipuc_patch_row_worker:
        get $m0, $WSR
        and $m0, $m0, 7                 // k
        ld32 $m1, $m13, $m15, 3         // count
        sub $m2, 5, $m0
        add $m1, $m1, $m2               // x = count + 5 - k
        shl $m2, $m1, 2
        add $m2, $m2, $m1               // x * 5
        shl $m3, $m2, 4
        add $m2, $m3, $m2               // x * 0x55
        shl $m3, $m2, 8
        add $m2, $m3, $m2               // x * 0x5555
        shl $m2, $m2, 1
        add $m2, $m2, $m1               // x * 0xaaab
        shr $m1, $m2, 18                // this worker's share
        brz $m1, .Lworker_exit
        add $m1, $m1, -1                // brnzdec runs share times from share-1
        ld32 $m5, $m13, $m15, 0         // row base
        ld32 $m6, $m13, $m15, 1         // offsets table
        ld32 $m7, $m13, $m15, 2         // values table
        shl $m0, $m0, 2                 // byte index of entry k
.Lworker_loop:
        ld32 $m3, $m6, $m0, 0
        ld32 $m4, $m7, $m0, 0
        st32 $m4, $m5, $m3, 0
        add $m0, $m0, 24                // entry k + 6 (six workers × 4 bytes)
        brnzdec $m1, .Lworker_loop
.Lworker_exit:
        exitz $m15
        .size ipuc_patch_row_worker, .-ipuc_patch_row_worker

// ---------------------------------------------------------------------------
// Timing and barriers

        .supervisor
        .globl ipuc_sample_cycle
        .type ipuc_sample_cycle, @function
        .p2align 3
ipuc_sample_cycle:
        setzi $m0, ipuc_sample_cycle_worker
        runall $m0, $m2, 0
        sync SYNCZONE_LOCAL
        br $m10
        .size ipuc_sample_cycle, .-ipuc_sample_cycle

        .worker
        .type ipuc_sample_cycle_worker, @function
        .p2align 3
ipuc_sample_cycle_worker:
        get $m0, $WSR
        and $m0, $m0, 7
        brnz $m0, .Lsample_exit         // only worker 0 samples
        get $m1, $COUNT_L
        st32 $m1, $m13, $m15, 0
.Lsample_exit:
        exitz $m15
        .size ipuc_sample_cycle_worker, .-ipuc_sample_cycle_worker

        .supervisor
        .globl ipuc_worker_barrier
        .type ipuc_worker_barrier, @function
        .p2align 3
ipuc_worker_barrier:
        setzi $m0, ipuc_worker_idle
        runall $m0, $m15, 0
        sync SYNCZONE_LOCAL
        br $m7
        .size ipuc_worker_barrier, .-ipuc_worker_barrier

        .worker
        .type ipuc_worker_idle, @function
        .p2align 3
ipuc_worker_idle:
        exitz $m15
        .size ipuc_worker_idle, .-ipuc_worker_idle

// ---------------------------------------------------------------------------
// Completion (supervisor): [ipuc_completion_word] = 1, then halt.

        .supervisor
        .globl ipuc_static_complete
        .type ipuc_static_complete, @function
        .p2align 3
ipuc_static_complete:
        setzi $m0, 1
        setzi $m1, ipuc_completion_word
        st32 $m0, $m1, $m15, 0
        br $m15                         // address 0: the supervisor halts
        .size ipuc_static_complete, .-ipuc_static_complete
