//! The profile as a Chrome/Perfetto trace (`model.trace.json.gz`): the JSON
//! Object Format of the Trace Event Format, which ui.perfetto.dev and
//! chrome://tracing open; written gzipped (`report::gzip`), which both
//! read as it is.
//!
//! One process holds one thread per tile (named by logical id, physical id
//! beside it, sorted by logical id), one complete event (`"ph": "X"`) per
//! sample; a second process holds the Repeat iterations. Timestamps are
//! microseconds of simulated time from the profile's first cycle (cycles /
//! clock), written from whole nanoseconds so that samples which touch in
//! cycles touch in the trace too: Perfetto refuses slices that overlap on
//! one thread rather than nest. Each event's `args.cycles` keeps the exact
//! cycle count.

use std::fmt::Write as _;

use super::profile::Profile;
use super::profile_html::tiles_in_logical_order;

/// The trace's own schema name and version (in `otherData`: the Trace Event
/// Format's fields are fixed).
pub const SCHEMA: (&str, u32) = ("ipuc.trace", 1);

/// Process of the tile threads and of the iteration track.
const TILES_PID: u32 = 1;
const REPEAT_PID: u32 = 2;

/// Nanoseconds of `cycles` at `clock_hz`, rounded to nearest: a monotonic
/// map, so ordered cycle boundaries stay ordered.
fn nanos(cycles: u64, clock_hz: u64) -> u64 {
    let clock = u128::from(clock_hz.max(1));
    ((u128::from(cycles) * 1_000_000_000 + clock / 2) / clock) as u64
}

/// `ns` as microseconds with three decimals (exact: no float rounding).
fn micros(out: &mut String, ns: u64) {
    let _ = write!(out, "{}.{:03}", ns / 1000, ns % 1000);
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into())
}

/// The trace of `profile` (as written: summarized or full).
pub fn render(profile: &Profile) -> String {
    let (span_start, _) = profile.span().unwrap_or((0, 0));
    let clock = profile.clock_hz;
    let at = |cycle: u64| nanos(cycle.saturating_sub(span_start), clock);
    let names: Vec<String> = profile
        .steps
        .iter()
        .map(|s| json_string(&s.operation))
        .collect();
    let label = if profile.simulated {
        "simulated"
    } else {
        "measured"
    };
    let mut out = String::with_capacity(64 + profile.sample_count() * 112);
    // No `displayTimeUnit`: the format makes it a display preference, but
    // Perfetto's JSON importer for years read `"ns"` as the unit of `ts` and
    // `dur` themselves, which would shrink this microsecond trace a
    // thousandfold and collapse its sub-microsecond samples.
    out.push_str("{\"otherData\":{");
    let _ = write!(
        out,
        "\"schema\":\"{}\",\"schema_version\":{},\"title\":{},\"cycles\":\"{label}\",\"clock_hz\":{clock},\"first_cycle\":{span_start},\"summarized\":{},\"time\":\"microseconds of {label} time from first_cycle (cycles / clock_hz); args.cycles is exact\"",
        SCHEMA.0,
        SCHEMA.1,
        json_string(&profile.title),
        profile.is_summarized()
    );
    out.push_str("},\n\"traceEvents\":[\n");
    let _ = write!(
        out,
        "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{TILES_PID},\"tid\":0,\"args\":{{\"name\":{}}}}}",
        json_string(&format!("IPU tiles ({label} cycles at {clock} Hz)"))
    );
    for (logical, t) in &tiles_in_logical_order(profile) {
        // tid 0 means "the process" to some readers: tiles start at 1.
        let tid = logical + 1;
        let _ = write!(
            out,
            ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{TILES_PID},\"tid\":{tid},\"args\":{{\"name\":\"tile {logical} (physical {})\"}}}}",
            t.tile
        );
        let _ = write!(
            out,
            ",\n{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{TILES_PID},\"tid\":{tid},\"args\":{{\"sort_index\":{logical}}}}}"
        );
        for s in &t.samples {
            let Some(step) = profile.steps.get(s.step as usize) else {
                continue;
            };
            let (a, b) = (at(s.start_cycle), at(s.end_cycle));
            let _ = write!(
                out,
                ",\n{{\"ph\":\"X\",\"pid\":{TILES_PID},\"tid\":{tid},\"name\":{},\"cat\":\"{}\",\"ts\":",
                names[s.step as usize],
                step.kind.name()
            );
            micros(&mut out, a);
            out.push_str(",\"dur\":");
            micros(&mut out, b - a);
            let _ = write!(out, ",\"args\":{{\"cycles\":{}", s.cycles());
            if let Some(it) = step.iteration {
                let _ = write!(out, ",\"iteration\":{it}");
            }
            if step.summed {
                out.push_str(",\"summed\":true");
            }
            out.push_str("}}");
        }
    }
    write_iterations(&mut out, profile, &at);
    out.push_str("\n]}\n");
    out
}

/// The Repeat iterations' track: one span per iteration, from its first
/// start to its last end over all tiles (`at`: cycles to trace time).
fn write_iterations(out: &mut String, profile: &Profile, at: &dyn Fn(u64) -> u64) {
    let _ = write!(
        out,
        ",\n{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{REPEAT_PID},\"tid\":0,\"args\":{{\"name\":\"Repeat iterations (first start to last end over all tiles)\"}}}}"
    );
    let _ = write!(
        out,
        ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{REPEAT_PID},\"tid\":1,\"args\":{{\"name\":\"iterations\"}}}}"
    );
    // One track: an iteration that starts before the previous one ends on
    // every tile (tiles skew) is drawn from that end; its args keep the
    // true cycles.
    let mut previous_end = 0;
    for it in profile.iteration_spans() {
        let a = at(it.start_cycle).max(previous_end);
        let b = at(it.end_cycle).max(a);
        previous_end = b;
        let _ = write!(
            out,
            ",\n{{\"ph\":\"X\",\"pid\":{REPEAT_PID},\"tid\":1,\"name\":\"iteration {}\",\"cat\":\"repeat\",\"ts\":",
            it.iteration
        );
        micros(out, a);
        out.push_str(",\"dur\":");
        micros(out, b - a);
        let _ = write!(
            out,
            ",\"args\":{{\"cycles\":{},\"start_cycle\":{},\"end_cycle\":{}}}}}",
            it.cycles(),
            it.start_cycle,
            it.end_cycle
        );
    }
}
