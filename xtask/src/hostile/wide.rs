//! The matrix's wide cases (#44): every checkpoint family in each
//! checkpoint case, re-sealed packages for every pair of binding classes
//! and program segments, description/program contradictions and huge
//! counts, every output flag at every input path and at each other, every
//! numeric flag at its edge values, 255-byte output names, and signals
//! among a run's output set.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use ipuc_core::description::{self, Fp8Operands, ModelDescription, WeightOrigin};
use ipuc_target::package::{BindingKind, Package, SegmentRole, SummaryValue};

use super::cases::s;
use super::reseal::{edited, moved_slice, Onto};
use super::{Case, Expect, Trigger, PAUSE_ENV, RUN_SECONDS};

/// The tiny checkpoint of each family (`tests/fixtures`).
fn families(root: &Path) -> [(&'static str, PathBuf); 4] {
    let t = root.join("tests/fixtures");
    [
        ("siglip", t.join("siglip/vision-f16")),
        ("clip", t.join("towers/clip-vision-f32")),
        ("vit", t.join("towers/vit-f32")),
        ("dinov2", t.join("towers/dinov2-bf16")),
    ]
}

fn tagged(cases: Vec<Case>, class: &'static str) -> Vec<Case> {
    cases
        .into_iter()
        .map(|mut c| {
            c.class = class;
            c
        })
        .collect()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// Each family's checkpoint with its config or its weights replaced by a
/// FIFO, a link to `/dev/zero` or a directory, and with a 5 GiB sparse
/// weights file whose header lies: compile and run must each refuse it
/// at once, naming what it is.
pub(super) fn checkpoint_families(root: &Path, work: &Path) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    let fifo = work.join("fifo");
    for (family, fixture) in families(root) {
        for (kind, needle) in [
            ("fifo", "FIFO"),
            ("zero", "character device"),
            ("directory", "directory"),
            ("sparse", "model.safetensors"),
        ] {
            for file in ["config.json", "model.safetensors"] {
                if kind == "sparse" && file == "config.json" {
                    continue;
                }
                let dir = work.join(format!("ck-{family}-{kind}-{file}"));
                fs::create_dir_all(&dir)?;
                for other in ["config.json", "model.safetensors"] {
                    if other != file {
                        fs::copy(fixture.join(other), dir.join(other))?;
                    }
                }
                let at = dir.join(file);
                match kind {
                    "fifo" => std::os::unix::fs::symlink(&fifo, &at)?,
                    "zero" => std::os::unix::fs::symlink("/dev/zero", &at)?,
                    "directory" => fs::create_dir_all(&at)?,
                    _ => {
                        let header = br#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#;
                        let mut st = (header.len() as u64).to_le_bytes().to_vec();
                        st.extend_from_slice(header);
                        fs::write(&at, st)?;
                        fs::OpenOptions::new()
                            .write(true)
                            .open(&at)?
                            .set_len(5 << 30)?;
                    }
                }
                for cmd in ["compile", "run"] {
                    cases.push(
                        Case::error(
                            format!("{family} checkpoint, {file} a {kind}: {cmd}"),
                            &[cmd, "--checkpoint", &s(&dir)],
                        )
                        .exits(4, &[needle]),
                    );
                }
            }
        }
    }
    Ok(tagged(cases, "checkpoint family"))
}

/// `exec` of a re-sealed package, which must be refused (exit 4) saying
/// `needle`.
fn exec_refused(work: &Path, what: &str, bytes: &[u8], needle: &str) -> Result<Case> {
    let path = work.join(format!("{}.ipuc", what.replace([' ', '/'], "-")));
    fs::write(&path, bytes)?;
    let lock = s(&work.join("device.lock"));
    Ok(Case::error(
        format!("re-sealed: {what}: exec"),
        &["exec", &s(&path), "--device-lock", &lock],
    )
    .exits(4, &[needle]))
}

/// Re-sealed packages: a slice of each binding class moved onto each
/// other class and onto each program segment, a description that
/// contradicts the program, and counts no program needs.
pub(super) fn resealed_wide(work: &Path, base: &Package) -> Result<Vec<Case>> {
    use BindingKind::{Input, Output, Weight};
    let mut cases = Vec::new();
    let classes = [Input, Weight, Output];
    for from in classes {
        for onto in classes {
            let Some(bytes) = moved_slice(base, from, Onto::Binding(onto)) else {
                // One input binding: nothing of its class to move it onto
                // (a slice on its own binding's other bytes is the older
                // "aliased output slices" case).
                if from == onto {
                    continue;
                }
                anyhow::bail!("no {from:?} slice to move onto {onto:?}");
            };
            let what = format!("{} slice on {} slice", from.name(), onto.name());
            cases.push(exec_refused(work, &what, &bytes, "shares SRAM")?);
        }
    }
    for (from, role) in [
        (Weight, SegmentRole::SupervisorCode),
        (Weight, SegmentRole::Runtime),
        (Input, SegmentRole::ExchangeRows),
        (Output, SegmentRole::State),
        (Weight, SegmentRole::RepeatPatchTable),
        (Input, SegmentRole::SharingPatchList),
        (Weight, SegmentRole::HostDescriptors),
    ] {
        // Not every package has every role (no host descriptors on the
        // simulator's packages): the roles present are each a case.
        let Some(bytes) = moved_slice(base, from, Onto::Segment(role)) else {
            continue;
        };
        let what = format!("{} slice on {}", from.name(), role.name());
        cases.push(exec_refused(
            work,
            &what,
            &bytes,
            "not inside one writable tensor or scratch segment",
        )?);
    }
    type Edit = Box<dyn Fn(&mut Package)>;
    // The base's description with its model edited, encoded again
    // unchecked (`exec` must refuse it).
    let base_description = description::read(base).context("the base package's description")?;
    let model = |edit: fn(&mut ModelDescription)| -> Result<Edit> {
        let mut d = base_description.clone();
        edit(
            d.model
                .as_mut()
                .context("the base package records no model")?,
        );
        let section = description::encode(&d)?;
        Ok(Box::new(move |p: &mut Package| {
            p.description = section.clone()
        }))
    };
    let edits: Vec<(&str, Edit, &str)> = vec![
        (
            "5 layers described, 1 compiled",
            model(|m| m.layers = 5)?,
            "a Repeat of",
        ),
        (
            "FP16 package described as FP8",
            model(|m| {
                m.numerics.fp8_scale = Some(-4);
                m.numerics.fp8_operands =
                    Fp8Operands::GEMM_WEIGHTS.with(Fp8Operands::GEMM_ACTIVATIONS);
                m.numerics.fp8_activation_scale = Some(0);
            })?,
            "FP8 GEMM weights",
        ),
        ("batch 2 described", model(|m| m.batch = 2)?, "pixel_values"),
        (
            "image 56 described",
            model(|m| m.config.image_size = 56)?,
            "pixel_values",
        ),
        (
            "preset and checkpoint origin",
            model(|m| {
                m.weights = WeightOrigin::Checkpoint {
                    sha256: [0; 32],
                    path: "/nowhere".into(),
                }
            })?,
            "weight origin",
        ),
        (
            "host call invocations 2^32-1",
            Box::new(|p: &mut Package| p.host_calls[0].invocations = u32::MAX),
            "host call invocations",
        ),
        (
            "host call phases 2^32-1",
            Box::new(|p: &mut Package| p.host_calls[0].phases = u32::MAX),
            "host call phases",
        ),
        (
            "step trip counts 2^32-1",
            Box::new(|p: &mut Package| {
                for s in p.steps.tiles.iter_mut().flat_map(|t| t.steps.iter_mut()) {
                    if let Some(r) = &mut s.repeat {
                        r.trip_count = u32::MAX;
                    }
                }
            }),
            "step repeat trip count",
        ),
    ];
    for (what, edit, needle) in edits {
        let bytes = edited(base, edit).with_context(|| what.to_string())?;
        cases.push(exec_refused(work, what, &bytes, needle)?);
    }
    Ok(tagged(cases, "re-sealed package"))
}

/// The counting loop re-sealed to claim 2^63 − 1 estimated cycles: the
/// budget must stay the capped default, so the run ends with a typed
/// cycle-limit fault in seconds, not after hours.
pub(super) fn budget_claim(work: &Path, counting: &Package) -> Result<Vec<Case>> {
    let bytes = edited(counting, |p| {
        p.plan_summary
            .insert("estimated_cycles".into(), SummaryValue::Integer(i64::MAX));
    })
    .context("re-sealing the claim")?;
    let mut case = exec_refused(work, "counting loop claiming 2^63 cycles", &bytes, "cycle")?;
    case.code = None;
    case.seconds = RUN_SECONDS;
    Ok(tagged(vec![case], "re-sealed package"))
}

/// Every output flag of each command pointed at each of its input files,
/// and every two of its file outputs at one path: usage errors (exit 2)
/// naming both flags, every input left as it was. Outputs that are
/// directories (`--profile-output D`, `--memory-profile-directory`) at a
/// file are refused too, with any typed error.
pub(super) fn same_paths(root: &Path, work: &Path, base: &Path) -> Result<Vec<Case>> {
    let dir = work.join("same");
    fs::create_dir_all(&dir)?;
    let copy = |from: &Path, name: &str| -> Result<PathBuf> {
        let to = dir.join(name);
        fs::copy(from, &to)?;
        Ok(to)
    };
    let fixture = root.join("tests/fixtures/siglip/vision-f16");
    let npy = copy(&fixture.join("pixel_values.npy"), "x.npy")?;
    let runtime = copy(&root.join("device-asm/static_runtime.S"), "rt.S")?;
    let package = copy(base, "in.ipuc")?;
    let ck = dir.join("ck");
    fs::create_dir_all(&ck)?;
    fs::copy(fixture.join("config.json"), ck.join("config.json"))?;
    fs::copy(
        fixture.join("model.safetensors"),
        ck.join("model.safetensors"),
    )?;
    let small = ["--workload", "siglip-small", "--vit-layers", "1"];
    // (command, its base arguments with inputs, inputs named there)
    type Inputs = Vec<(&'static str, PathBuf)>;
    let runs: Vec<(&str, Vec<String>, Inputs)> = vec![
        (
            "run",
            ["run", "--input", &s(&npy), "--runtime-source", &s(&runtime)]
                .iter()
                .chain(&small)
                .map(|a| a.to_string())
                .collect(),
            vec![
                ("--input", npy.clone()),
                ("--runtime-source", runtime.clone()),
            ],
        ),
        (
            "run",
            strings(&["run", "--checkpoint", &s(&ck)]),
            vec![
                ("--checkpoint", ck.join("config.json")),
                ("--checkpoint", ck.join("model.safetensors")),
            ],
        ),
        (
            "compile",
            ["compile", "--runtime-source", &s(&runtime)]
                .iter()
                .chain(&small)
                .map(|a| a.to_string())
                .collect(),
            vec![("--runtime-source", runtime.clone())],
        ),
        (
            "compile",
            strings(&["compile", "--checkpoint", &s(&ck)]),
            vec![("--checkpoint", ck.join("model.safetensors"))],
        ),
        (
            "exec",
            strings(&["exec", &s(&package), "--input", &s(&npy)]),
            vec![("PACKAGE", package.clone()), ("--input", npy.clone())],
        ),
        (
            "asm",
            strings(&["asm", &s(&runtime)]),
            vec![("FILE", runtime.clone())],
        ),
    ];
    let file_outputs = |cmd: &str| -> &'static [&'static str] {
        match cmd {
            "run" => &[
                "--package",
                "--plan-output",
                "--summary-json",
                "--output-embedding",
            ],
            "compile" => &["--package", "--plan-output", "--summary-json"],
            "exec" => &["--summary-json", "--output-embedding"],
            _ => &["-o"],
        }
    };
    let dir_outputs = |cmd: &str| -> &'static [&'static str] {
        match cmd {
            "run" => &["--profile-output", "--memory-profile-directory"],
            "compile" => &["--memory-profile-directory"],
            "exec" => &["--profile-output"],
            _ => &[],
        }
    };
    let mut cases = Vec::new();
    for (cmd, args, inputs) in &runs {
        for (in_flag, input) in inputs {
            for out in file_outputs(cmd).iter().chain(dir_outputs(cmd)) {
                let mut a = args.clone();
                a.extend([out.to_string(), s(input)]);
                let a: Vec<&str> = a.iter().map(String::as_str).collect();
                let case = Case::error(format!("{cmd}: {out} at {in_flag}'s file"), &a);
                let case = if file_outputs(cmd).contains(out) {
                    case.exits(2, &[out, in_flag])
                } else {
                    case
                };
                cases.push(case.guard(input));
            }
        }
    }
    for cmd in ["run", "compile", "exec"] {
        let args = &runs.iter().find(|r| r.0 == cmd).context("command")?.1;
        let outs = file_outputs(cmd);
        for (i, a) in outs.iter().enumerate() {
            for b in &outs[i + 1..] {
                let at = dir.join(format!("{cmd}{a}{b}.out"));
                let mut v = args.clone();
                v.extend([a.to_string(), s(&at), b.to_string(), s(&at)]);
                let v: Vec<&str> = v.iter().map(String::as_str).collect();
                cases.push(
                    Case::error(format!("{cmd}: {a} and {b} at one path"), &v).exits(2, &[a, b]),
                );
            }
        }
        // The profile's viewer page at another output's path.
        if dir_outputs(cmd).contains(&"--profile-output") {
            let profile = dir.join(format!("{cmd}-p.ipuprof"));
            let viewer = dir.join(format!("{cmd}-p.html"));
            let mut v = args.clone();
            v.extend([
                "--profile-output".into(),
                s(&profile),
                "--summary-json".into(),
                s(&viewer),
            ]);
            let v: Vec<&str> = v.iter().map(String::as_str).collect();
            cases.push(
                Case::error(format!("{cmd}: --summary-json at the profile viewer"), &v)
                    .exits(2, &["--profile-output", "--summary-json"]),
            );
        }
    }
    Ok(tagged(cases, "output at an input or output"))
}

/// Every numeric flag at 0, −0, a negative tiny value, a huge one, one
/// past 64 bits, one past 32 bits and −1: a usage error (2), a model too
/// large (3) or a run that works (0); never 1, 4, 5, a panic or a hang.
pub(super) fn numeric_flags(work: &Path, base: &Path) -> Vec<Case> {
    const VALUES: [&str; 7] = [
        "0",
        "-0",
        "-1e-300",
        "1e300",
        "18446744073709551616",
        "4294967296",
        "-1",
    ];
    let compile: Vec<String> = strings(&[
        "compile",
        "--workload",
        "siglip-small",
        "--planning-tiles",
        "16",
    ]);
    let exec = strings(&[
        "exec",
        &s(base),
        "--device-lock",
        &s(&work.join("device.lock")),
    ]);
    let bench = strings(&[
        "exchange", "bench", "--tiles", "16", "--words", "64", "--fanout", "2",
    ]);
    let inspect = strings(&["inspect", &s(base)]);
    let flags: Vec<(&Vec<String>, &str, &[&str])> = vec![
        (&compile, "--planning-beam-width", &[]),
        (&compile, "--planning-tiles", &[]),
        (&compile, "--optimization-steps", &[]),
        (&compile, "--exchange-stream-words", &[]),
        (&compile, "--vit-layers", &[]),
        (&compile, "--vit-batch", &[]),
        (&compile, "--image-size", &[]),
        (&compile, "--fp8-scale", &[]),
        (&compile, "--fp8-activation-scale", &["--fp8-scale", "-4"]),
        (&compile, "--seed", &[]),
        (&compile, "--planner-data-budget", &[]),
        (&exec, "--reference-inferences", &[]),
        (&exec, "--diagnostic-atol", &["--reference-run"]),
        (&exec, "--diagnostic-rtol", &["--reference-run"]),
        (&exec, "--sync-cycles", &[]),
        (&exec, "--cycle-budget", &[]),
        (&bench, "--tiles", &[]),
        (&bench, "--words", &[]),
        (&bench, "--fanout", &[]),
        (&inspect, "--tile", &[]),
    ];
    let mut cases = Vec::new();
    for (args, flag, extra) in flags {
        for value in VALUES {
            let mut a = args.clone();
            // Without a layer count the compile builds all 27.
            if args[0] == "compile" && flag != "--vit-layers" {
                a.extend(["--vit-layers".into(), "1".into()]);
            }
            a.extend(extra.iter().map(|e| e.to_string()));
            a.push(format!("{flag}={value}"));
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            let mut case =
                Case::error(format!("{flag}={value}"), &a).expect(Expect::UsageOrSuccess);
            case.seconds = RUN_SECONDS;
            cases.push(case);
        }
    }
    tagged(cases, "numeric flag edge")
}

/// Output names of 255 bytes (the most a file name may have) for every
/// file output: written, like any other name.
pub(super) fn long_names(work: &Path, base: &Path) -> Result<Vec<Case>> {
    let dir = work.join("long");
    fs::create_dir_all(&dir)?;
    let name = |tag: &str, ext: &str| {
        dir.join(format!(
            "{tag}{}{ext}",
            "n".repeat(255 - tag.len() - ext.len())
        ))
    };
    let src = dir.join("ok.S");
    fs::write(&src, "nop\n")?;
    let mut cases = Vec::new();
    let o = name("o", ".bin");
    let mut c = Case::error("asm -o at 255 bytes", &["asm", &s(&src), "-o", &s(&o)]);
    c.expect = Expect::Success;
    cases.push(c.guard(&o));
    let (pkg, plan, summary) = (name("p", ".ipuc"), name("l", ".txt"), name("s", ".json"));
    let mut c = Case::error(
        "compile: --package, --plan-output, --summary-json at 255 bytes",
        &[
            "compile",
            "--workload",
            "siglip-small",
            "--vit-layers",
            "1",
            "--planning-tiles",
            "16",
            "--package",
            &s(&pkg),
            "--plan-output",
            &s(&plan),
            "--summary-json",
            &s(&summary),
        ],
    );
    c.expect = Expect::Success;
    c.seconds = RUN_SECONDS;
    cases.push(c.guard(&pkg).guard(&plan).guard(&summary));
    let (emb, summary) = (name("e", ".npy"), name("x", ".json"));
    let mut c = Case::error(
        "exec: --output-embedding, --summary-json at 255 bytes",
        &[
            "exec",
            &s(base),
            "--output-embedding",
            &s(&emb),
            "--summary-json",
            &s(&summary),
        ],
    );
    c.expect = Expect::Success;
    c.seconds = RUN_SECONDS;
    cases.push(c.guard(&emb).guard(&summary));
    Ok(tagged(cases, "255-byte name"))
}

/// A run writing a set of artifacts over a previous set (package,
/// profile files, embedding, summary): SIGTERM or SIGINT aimed while a
/// later file of the set is staged must leave the whole previous set;
/// aimed after the first rename of the commit, the whole new set. Each
/// case's set is written back before it runs ([`reset_sets`]).
pub(super) fn artifact_sets(work: &Path) -> Result<Vec<Case>> {
    let dir = work.join("set");
    fs::create_dir_all(&dir)?;
    let files = [
        dir.join("out.ipuc"),
        dir.join("p.ipuprof"),
        dir.join("p.html"),
        dir.join("p.trace.json.gz"),
        dir.join("p.operations.json"),
        dir.join("emb.npy"),
        dir.join("summary.json"),
    ];
    let args = [
        "run",
        "--workload",
        "siglip-small",
        "--vit-layers",
        "1",
        "--planning-tiles",
        "16",
        "--package",
        &s(&files[0]),
        "--profile-output",
        &s(&files[1]),
        "--output-embedding",
        &s(&files[5]),
        "--summary-json",
        &s(&files[6]),
    ];
    let mut cases = Vec::new();
    for (sig, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT")] {
        for (aim, expect, trigger) in [
            (
                "while the trace is staged",
                Expect::AimedSignal,
                Trigger::Writing {
                    file: 3,
                    at_least: 0,
                },
            ),
            (
                "after the commit's first rename",
                Expect::AimedCommit,
                Trigger::Replaced { file: 0 },
            ),
        ] {
            let mut c = Case::error(format!("{name} {aim} of a run's artifact set"), &args);
            c.expect = expect;
            c.seconds = RUN_SECONDS;
            c.set = true;
            c.signal = Some((sig, trigger));
            c.env = vec![(PAUSE_ENV, "150".into())];
            for f in &files {
                c.guarded
                    .push((f.clone(), format!("previous {}\n", s(f)).into_bytes()));
            }
            cases.push(c);
        }
    }
    // At a time: the old set or the new one, whatever the signal meets.
    // A run takes 1.5-2.5 s on two cores: these land in its compile and
    // near its writes.
    for ms in [1000u64, 2000] {
        let mut c = Case::error(
            format!("SIGTERM after {ms} ms of a run's artifact set"),
            &args,
        );
        c.expect = Expect::Signal;
        c.seconds = RUN_SECONDS;
        c.set = true;
        c.signal = Some((libc::SIGTERM, Trigger::After(Duration::from_millis(ms))));
        for f in &files {
            c.guarded
                .push((f.clone(), format!("previous {}\n", s(f)).into_bytes()));
        }
        cases.push(c);
    }
    Ok(tagged(cases, "signal among an artifact set"))
}

/// A compile on a full disk writing a package, its memory maps, plan and
/// summary over a previous set: the whole previous set stays.
pub(super) fn full_disk_set(full: &Path) -> Result<Vec<Case>> {
    let mem = full.join("setmem");
    fs::create_dir_all(&mem)?;
    let files = [
        full.join("set.ipuc"),
        mem.join("memory.html"),
        mem.join("memory.json"),
        mem.join("memory.png"),
        full.join("set-plan.txt"),
        full.join("set-summary.json"),
    ];
    let mut c = Case::error(
        "full disk: a compile's package, memory maps, plan and summary",
        &[
            "compile",
            "--workload",
            "siglip-small",
            "--vit-layers",
            "1",
            "--planning-tiles",
            "16",
            "--package",
            &s(&files[0]),
            "--memory-profile-directory",
            &s(&mem),
            "--plan-output",
            &s(&files[4]),
            "--summary-json",
            &s(&files[5]),
        ],
    )
    .exits(4, &[]);
    c.seconds = RUN_SECONDS;
    c.set = true;
    for f in &files {
        let before = format!("previous {}\n", s(f)).into_bytes();
        fs::write(f, &before)?;
        c.guarded.push((f.clone(), before));
    }
    Ok(tagged(vec![c], "full disk"))
}
