//! `ipuc exchange` (issue #3): exchange scheduler tools.

use std::time::Instant;

use anyhow::{bail, Context};
use ipuc_core::exchange::{
    check_phase, random_phase, schedule_unchecked, RandomPhaseSpec, ScheduleOptions,
};
use ipuc_core::plan::code::SENDER_BUDGET_PERCENT;
use ipuc_core::rows::ExchangeOptions;

use crate::phase_image::{build_image, verify_image, DEFAULT_ROW_ADDRESS};
use ipuc_sim::fabric::execute_phase;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Schedule a random many-to-many phase, check it, run it on the
    /// simulator's fabric and report events against the lower bound.
    Bench(BenchArgs),
    /// Schedule the phases a compile wrote with `IPUC_DUMP_PHASES=FILE`
    /// (one after the other), check each, and print per-phase times and
    /// events against the lower bound.
    ScheduleDump(DumpArgs),
}

#[derive(clap::Args, Debug)]
pub struct DumpArgs {
    /// The dump file.
    file: std::path::PathBuf,
    /// Only these steps (comma-separated); default all.
    #[arg(long, value_delimiter = ',')]
    steps: Vec<u32>,
    /// Skip the independent check.
    #[arg(long)]
    no_check: bool,
    /// Split multicasts into up to this many groups of similar receiver
    /// pointer lag where the sender has room (0 or 1: never).
    #[arg(long, default_value_t = ScheduleOptions::default().lag_groups)]
    lag_groups: u32,
}

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Logical tiles 0..N each send one transfer (2..=1472).
    #[arg(long, default_value_t = 1472, value_parser = clap::value_parser!(u32).range(2..=1472))]
    tiles: u32,
    /// Words per transfer (random in W/2..=W unless --exact; at least 1).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    words: u32,
    /// Destinations per transfer (at least 1).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    fanout: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Every transfer exactly W words.
    #[arg(long)]
    exact: bool,
    /// Mark about half the transfers as 64-bit paired requests.
    #[arg(long)]
    mixed_width: bool,
    /// Smallest piece the scheduler splits a transfer into.
    #[arg(long, default_value_t = ScheduleOptions::default().min_piece_words)]
    min_piece: u32,
    /// Only schedule and report events and ratio (no check, no simulation):
    /// for exploring scheduler settings on large shapes.
    #[arg(long)]
    schedule_only: bool,
    /// Sender load budget (% of the lower bound) for splitting multicasts.
    #[arg(long, default_value_t = ScheduleOptions::default().sender_budget_percent)]
    sender_budget: u32,
    /// Split multicasts into up to this many groups of similar receiver
    /// pointer lag where the sender has room (0 or 1: never).
    #[arg(long, default_value_t = ScheduleOptions::default().lag_groups)]
    lag_groups: u32,
    /// Order jobs by the largest remaining load among their tiles (true/false).
    #[arg(long, default_value_t = ScheduleOptions::default().remaining_first, action = clap::ArgAction::Set)]
    remaining_first: bool,
    /// Longest piece one stream carries, in words (the seeds' `--exchange-stream-words`).
    #[arg(long, value_parser = super::checks::at_least_one_u32)]
    exchange_stream_words: Option<u32>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Command::Bench(b) => bench(b),
        Command::ScheduleDump(d) => schedule_dump(d),
    }
}

fn schedule_dump(a: DumpArgs) -> anyhow::Result<()> {
    let text = crate::fsio::read_string_bounded(&a.file, crate::fsio::Limit::PHASE_DUMP)
        .with_context(|| format!("reading {}", a.file.display()))?;
    let jobs = crate::compile::phase_dump::read_jobs(&text)?;
    let (mut total_ms, mut events, mut bound) = (0.0, 0u64, 0u64);
    for job in jobs
        .iter()
        .filter(|j| a.steps.is_empty() || a.steps.contains(&j.step.0))
    {
        let t = Instant::now();
        let done = job
            // Scheduling only: a dump carries no Repeat frames to relocate with.
            .schedule(ExchangeOptions {
                outgoing_base: false,
                // The compile's knobs, so the events match the compile's.
                schedule: ScheduleOptions {
                    sender_budget_percent: SENDER_BUDGET_PERCENT as u32,
                    lag_groups: a.lag_groups,
                    ..ScheduleOptions::default()
                },
            })
            .with_context(|| format!("step {}", job.step.0))?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if !a.no_check {
            check_phase(&job.wire, &done.scheduled.rows)
                .with_context(|| format!("checking step {}", job.step.0))?;
        }
        let s = &done.scheduled;
        let dests: usize = job
            .wire
            .transfers
            .iter()
            .map(|t| t.destinations.len())
            .sum();
        println!(
            "step {:>4}: {:>6} transfers {:>7} destinations {:>7} pieces events={:>7} lower_bound={:>7} ratio={:.3} schedule={:.1}ms",
            job.step.0,
            job.wire.transfers.len(),
            dests,
            s.pieces.len(),
            s.events,
            s.lower_bound,
            f64::from(s.events) / s.lower_bound.max(1) as f64,
            ms
        );
        total_ms += ms;
        events += u64::from(s.events);
        bound += s.lower_bound;
    }
    println!(
        "total: events={events} lower_bound={bound} ratio={:.3} schedule={total_ms:.0}ms{}",
        events as f64 / bound.max(1) as f64,
        if a.no_check {
            " (not checked)"
        } else {
            " (checked)"
        }
    );
    Ok(())
}

/// The bench's flags make a phase: a fanout below the tile count, words
/// within the bench's source area.
fn check_bench_args(a: &BenchArgs) -> anyhow::Result<()> {
    if a.fanout >= a.tiles {
        crate::usage_bail!(
            "--fanout {} needs more than {} tiles (each transfer goes to distinct other tiles)",
            a.fanout,
            a.tiles
        );
    }
    let max_words = (ipuc_core::exchange::RANDOM_DESTINATION_BASE
        - ipuc_core::exchange::RANDOM_SOURCE_BASE)
        / 4;
    if a.words > max_words {
        crate::usage_bail!(
            "--words {} exceeds the {max_words} words of the bench's source area",
            a.words
        );
    }
    Ok(())
}

/// What became of the phase's 64-bit requests, when it has any.
fn print_pairing(scheduled: &ipuc_core::exchange::ScheduledPhase) {
    let p = &scheduled.pairing;
    if p.requested > 0 {
        let reasons: Vec<String> = p
            .reasons
            .iter()
            .map(|(why, n)| format!("{n} receivers: {}", why.describe()))
            .collect();
        println!(
            "paired: {} of {} 64-bit requests sent as 64-bit items, {} partly, {} fell back to 32-bit ({}); {} words moved as 64-bit items, {} paired pieces",
            p.paired,
            p.requested,
            p.partial,
            p.fell_back,
            if reasons.is_empty() { "none".into() } else { reasons.join(", ") },
            p.paired_words,
            scheduled.pieces.iter().filter(|x| x.paired).count()
        );
    }
}

/// The schedule's events against the lower bound (and the 64-bit
/// items' bound where it differs), its pieces and row words.
fn print_events(scheduled: &ipuc_core::exchange::ScheduledPhase) {
    let lb = scheduled.lower_bound.max(1);
    let row_words: usize = scheduled.rows.iter().map(|r| r.words.len()).sum();
    println!(
        "events={} lower_bound={} ratio={:.3} pieces={} row_words={} max_row_words={}",
        scheduled.events,
        scheduled.lower_bound,
        f64::from(scheduled.events) / lb as f64,
        scheduled.pieces.len(),
        row_words,
        scheduled
            .rows
            .iter()
            .map(|r| r.words.len())
            .max()
            .unwrap_or(0)
    );
    if scheduled.lower_bound_events != scheduled.lower_bound {
        println!(
            "with 64-bit items: lower_bound_events={} ratio_events={:.3}",
            scheduled.lower_bound_events,
            f64::from(scheduled.events) / scheduled.lower_bound_events.max(1) as f64
        );
    }
}

fn bench(a: BenchArgs) -> anyhow::Result<()> {
    check_bench_args(&a)?;
    let spec = RandomPhaseSpec {
        tiles: a.tiles,
        words: a.words,
        fanout: a.fanout,
        seed: a.seed,
        exact_words: a.exact,
        mixed_width: a.mixed_width,
    };
    let phase = random_phase(spec);
    println!(
        "phase: tiles={} transfers={} words<={} fanout={} seed={}",
        a.tiles,
        phase.transfers.len(),
        a.words,
        a.fanout,
        a.seed
    );
    let t0 = Instant::now();
    let scheduled = schedule_unchecked(
        &phase,
        ScheduleOptions {
            min_piece_words: a.min_piece,
            sender_budget_percent: a.sender_budget,
            remaining_first: a.remaining_first,
            max_stream_words: a.exchange_stream_words,
            lag_groups: a.lag_groups,
        },
    )
    .context("scheduling")?;
    let t_schedule = t0.elapsed();
    if a.schedule_only {
        println!(
            "events={} lower_bound={} ratio={:.3} pieces={} (schedule only: not checked or simulated)",
            scheduled.events,
            scheduled.lower_bound,
            f64::from(scheduled.events) / scheduled.lower_bound.max(1) as f64,
            scheduled.pieces.len()
        );
        println!("wall: schedule={:.1}ms", t_schedule.as_secs_f64() * 1e3);
        return Ok(());
    }
    let t1 = Instant::now();
    let report = check_phase(&phase, &scheduled.rows).context("checking the rows")?;
    let t_check = t1.elapsed();
    let (before, calls) = build_image(&phase, &scheduled.rows, DEFAULT_ROW_ADDRESS, a.seed as u32)
        .map_err(anyhow::Error::msg)?;
    let mut after = before.clone();
    let t2 = Instant::now();
    let run = execute_phase(&calls, &mut after).context("simulating the phase")?;
    let t_sim = t2.elapsed();
    let compared = verify_image(&phase, &before, &after).map_err(anyhow::Error::msg)?;
    if run.words_moved != phase.words_delivered() || report.words_delivered != run.words_moved {
        bail!(
            "moved {} words, expected {}",
            run.words_moved,
            phase.words_delivered()
        );
    }
    print_events(&scheduled);
    println!(
        "words moved={} (checked; simulated bytes compared={})",
        run.words_moved, compared
    );
    print_pairing(&scheduled);
    println!(
        "wall: schedule={:.1}ms check={:.1}ms simulate={:.1}ms ({:.1} Mwords/s simulated fabric)",
        t_schedule.as_secs_f64() * 1e3,
        t_check.as_secs_f64() * 1e3,
        t_sim.as_secs_f64() * 1e3,
        run.words_moved as f64 / t_sim.as_secs_f64().max(1e-9) / 1e6
    );
    Ok(())
}
