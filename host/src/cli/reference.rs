//! `ipuc reference`: run the host FP32 reference of a vision tower on
//! an image or a `pixel_values.npy`, write the outputs as `.npy`, report wall
//! time and GFLOP/s.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};

use super::workload::{check_flags, load_model, load_pixels, InputArgs, WorkloadArgs};
use crate::input::write_npy;
use crate::model::SiglipModel;
use crate::reference::{run_siglip, Numerics};

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("pixels").required(true).args(["image", "input"])))]
pub struct Args {
    #[command(flatten)]
    pub model: WorkloadArgs,
    #[command(flatten)]
    pub input: InputArgs,
    /// Where to write the pooled embedding `[B, D]` (.npy): the family's
    /// `pooler_output` (SigLIP's MAP head, CLIP's post_layernorm class
    /// token, ViT's tanh pooler, DINOv2's class token).
    #[arg(long, help_heading = super::headings::OUTPUTS)]
    pub output_embedding: PathBuf,
    /// Where to write the last hidden state after the final LayerNorm (.npy).
    #[arg(long, help_heading = super::headings::OUTPUTS)]
    pub output_hidden: Option<PathBuf>,
    /// fp32 (exact) or device (FP8 weights / FP16 activations as the IPU casts).
    #[arg(long, default_value = "fp32", help_heading = super::headings::NUMERICS)]
    pub numerics: Numerics,
}

fn describe(model: &SiglipModel) -> String {
    let c = &model.config;
    format!(
        "{} layers of {}, width {}, MLP {}, {} heads, {} tokens, batch {}",
        model.layers,
        c.num_hidden_layers,
        c.hidden_size,
        c.intermediate_size,
        c.num_attention_heads,
        c.num_tokens(),
        model.options.vit_batch
    )
}

fn write_output(path: &Path, shape: &[usize], data: &[f32], what: &str) -> anyhow::Result<()> {
    write_npy(path, shape, data)?;
    crate::say!("wrote {what} {shape:?} to {}", path.display());
    Ok(())
}

/// The 1-minute load average (Linux), to qualify timings.
fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next().map(str::to_string)
}

/// One line per encoder layer done: a `\r` counter on a terminal, a
/// debug line (shown with -vv) in piped logs.
fn layer_progress() -> crate::reference::Progress {
    let live = std::io::stderr().is_terminal()
        && crate::output::verbosity() > crate::output::Verbosity::Quiet;
    Box::new(move |done, of| {
        if !live {
            tracing::debug!("reference: encoder layer {done}/{of}");
            return;
        }
        eprint!("\r  encoder layer {done}/{of}");
        if done == of {
            eprintln!();
        }
        let _ = std::io::stderr().flush();
    })
}

/// The forward pass's wall time and rate, and its CPU time with what it
/// would take on an idle machine.
fn print_forward_times(out: &crate::reference::SiglipOutputs) {
    crate::say!(
        "forward: {:.3} s wall, {:.1} GFLOP (matmul + attention), {:.1} GFLOP/s",
        out.seconds,
        out.flops as f64 / 1e9,
        out.gflops_per_second()
    );
    if let Some(cpu) = out.cpu_seconds {
        let threads = rayon::current_num_threads() as f64;
        crate::detail!(
            "forward CPU time: {cpu:.2} s over {threads} thread(s) (≈ {:.2} s wall on an otherwise idle machine; machine load {})",
            cpu / threads,
            load_average().unwrap_or_else(|| "unknown".into())
        );
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let total = Instant::now();
    let mut outputs = vec![("--output-embedding", args.output_embedding.clone())];
    outputs.extend(
        args.output_hidden
            .iter()
            .map(|p| ("--output-hidden", p.clone())),
    );
    super::workload::distinct(
        &super::workload::input_files(&args.input, args.model.checkpoint.as_deref(), None),
        &outputs,
    )?;
    super::checks::output_file("--output-embedding", &args.output_embedding)?;
    if let Some(path) = &args.output_hidden {
        super::checks::output_file("--output-hidden", path)?;
    }
    check_flags(&args.model)?;
    let spec = args.model.spec();
    let pixels = load_pixels(&args.input, &spec)?;
    let t = Instant::now();
    let (model, weights) = load_model(&spec, pixels.batch())?;
    if model.pooled.is_none() {
        bail!("this model has no pooler (a SigLIP config with vision_use_head = false, or a ViT checkpoint without pooler.dense), so there is no embedding to write");
    }
    crate::say!("model: {}", describe(&model));
    let what = match spec.checkpoint() {
        Some(dir) => format!("loaded from {}", dir.display()),
        None => format!("random, seed {}", spec.seed),
    };
    crate::say!(
        "weights: {} tensors, {:.1} M parameters ({what}) in {:.2} s",
        weights.len(),
        weights.parameter_count() as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    crate::say!(
        "running the {} reference on {} thread(s)…",
        match args.numerics {
            Numerics::Fp32 => "FP32",
            Numerics::Device => "device-numerics",
        },
        rayon::current_num_threads()
    );
    let out = run_siglip(
        &model,
        &weights,
        &pixels,
        (args.numerics, &[]),
        Some(layer_progress()),
    )?;
    print_forward_times(&out);

    let pooled = out
        .pooler_output
        .as_ref()
        .context("the graph produced no pooler_output")?;
    write_output(
        &args.output_embedding,
        &pooled.shape,
        &pooled.data,
        "embedding",
    )?;
    if let Some(path) = &args.output_hidden {
        let h = &out.last_hidden_state;
        write_output(path, &h.shape, &h.data, "last hidden state")?;
    }
    crate::say!("total: {:.2} s", total.elapsed().as_secs_f64());
    // The one line a script greps (also under -q), as `run` and `compile` end.
    crate::result_line!(
        "result: REFERENCE embedding {:?} in {}",
        pooled.shape,
        args.output_embedding.display()
    );
    Ok(())
}
