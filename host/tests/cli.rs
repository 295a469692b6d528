//! The `ipuc` binary as a user meets it: the seeds' flags and aliases, flag
//! range checks, early path checks and the exact error messages
//! (snapshots: an `error:` line that changes must change here too).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn ipuc() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ipuc"));
    c.env("RAYON_NUM_THREADS", "2");
    c
}

fn run(args: &[&str]) -> Output {
    ipuc().args(args).output().expect("ipuc runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The `error: …` line ipuc printed last.
fn error_line(o: &Output) -> String {
    stderr(o)
        .lines()
        .rev()
        .find(|l| l.starts_with("error"))
        .unwrap_or_default()
        .to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ipuc-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn out_of_range_flags_name_the_allowed_range() {
    let o = run(&[
        "compile",
        "--workload",
        "siglip-small",
        "--planning-beam-width",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        error_line(&o),
        "error: invalid value '0' for '--planning-beam-width <PLANNING_BEAM_WIDTH>': 0 is out of range (allowed: 1..=1024)"
    );
    let o = run(&[
        "run",
        "--workload",
        "siglip-small",
        "--reference-inferences",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        error_line(&o),
        "error: invalid value '0' for '--reference-inferences <REFERENCE_INFERENCES>': 0 is not in 1..=10000"
    );
    let o = run(&[
        "compile",
        "--workload",
        "siglip-small",
        "--planning-tiles",
        "1473",
    ]);
    assert_eq!(
        error_line(&o),
        "error: invalid value '1473' for '--planning-tiles <PLANNING_TILES>': 1473 is out of range (allowed: 1..=1472)"
    );
}

#[test]
fn package_into_a_missing_directory_fails_before_compiling() {
    let o = run(&[
        "compile",
        "--workload",
        "siglip-small",
        "--package",
        "/nonexistent-ipuc-dir/model.ipuc",
    ]);
    assert_eq!(o.status.code(), Some(4));
    assert_eq!(
        error_line(&o),
        "error: --package /nonexistent-ipuc-dir/model.ipuc: directory /nonexistent-ipuc-dir does not exist"
    );
    assert!(!stderr(&o).contains("compile:"), "{}", stderr(&o));
}

#[test]
fn an_image_given_as_input_hints_at_image() {
    let dir = scratch("input-png");
    let png = dir.join("cat.png");
    image::RgbImage::new(4, 4).save(&png).unwrap();
    let o = run(&[
        "run",
        "--workload",
        "siglip-small",
        "--input",
        png.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(4));
    let p = png.display();
    assert_eq!(
        error_line(&o),
        format!("error: --input {p}: this is an image; --input takes a float32 `.npy` of pixel values (NCHW). Give images with --image {p}")
    );
}

#[test]
fn missing_inputs_are_named_once() {
    let o = run(&[
        "run",
        "--workload",
        "siglip-small",
        "--image",
        "/nonexistent-ipuc.png",
    ]);
    assert_eq!(
        error_line(&o),
        "error: --image /nonexistent-ipuc.png: no such file"
    );
    // A checkpoint whose weights are missing: the OS error appears once.
    let dir = scratch("ckpt");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/siglip/vision-f16/config.json"),
        dir.join("config.json"),
    )
    .unwrap();
    let o = run(&["run", "--checkpoint", dir.to_str().unwrap()]);
    let line = error_line(&o);
    assert_eq!(line.matches("os error 2").count(), 1, "{line}");
    assert!(line.contains("model.safetensors"), "{line}");
}

#[test]
fn sdk_without_the_hardware_backend_is_a_clear_error() {
    let o = run(&["hw-check", "--sdk", "/opt/poplar"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        error_line(&o),
        format!(
            "error: --sdk /opt/poplar: {}; drop --sdk",
            ipuc::cli::device_args::NO_HARDWARE_BACKEND
        )
    );
}

#[test]
fn a_runtime_source_that_breaks_a_patcher_fails_hw_check() {
    let dir = scratch("runtime");
    let good = dir.join("good.S");
    std::fs::write(&good, ipuc_core::runtime::SOURCE).unwrap();
    let o = run(&["hw-check", "--runtime-source", good.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(&format!("runtime: {}", good.display())));
    assert!(
        stdout(&o).contains("hw-check: 28 passed, 0 failed"),
        "{}",
        stdout(&o)
    );

    // The scalar patcher stores the offset instead of the replacement word.
    let store = "        st32 $m8, $m2, $m7, 0\n        add $m6, $m6, 4\n        brnzdec $m5, .Lscalar_loop";
    assert!(ipuc_core::runtime::SOURCE.contains(store));
    let broken = dir.join("broken.S");
    std::fs::write(
        &broken,
        ipuc_core::runtime::SOURCE.replacen(store, &store.replace("$m8, $m2", "$m7, $m2"), 1),
    )
    .unwrap();
    let o = run(&["hw-check", "--runtime-source", broken.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("FAIL"), "{}", stdout(&o));
    assert!(
        error_line(&o).starts_with("error: hw-check:"),
        "{}",
        error_line(&o)
    );
}

/// Errors from a replacement runtime point at its file and line (exit 4,
/// bad input), not at a generated `<tile N program>`.
#[test]
fn runtime_source_errors_name_the_file_and_line() {
    let dir = scratch("runtime-lines");
    let compile = |runtime: &Path| {
        run(&[
            "compile",
            "--workload",
            "siglip-small",
            "--vit-layers",
            "1",
            "--planning-tiles",
            "4",
            "--runtime-source",
            runtime.to_str().unwrap(),
        ])
    };
    let line_of =
        |text: &str, prefix: &str| text.lines().position(|l| l.starts_with(prefix)).unwrap() + 1;

    // The worker barrier defined without `.globl`: programs call it.
    let hidden = dir.join("hidden.S");
    let text = ipuc_core::runtime::SOURCE.replacen("        .globl ipuc_worker_barrier\n", "", 1);
    std::fs::write(&hidden, &text).unwrap();
    let o = compile(&hidden);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(
        error_line(&o),
        format!(
            "error: the runtime and kernel stubs: {}:{}:1: 'ipuc_worker_barrier' is defined but not exported: a runtime must `.globl` it (tile programs call it)",
            hidden.display(),
            line_of(&text, "ipuc_worker_barrier:")
        )
    );

    // A global that every tile program defines too (the first step's
    // label): the link error names both places, the user's line included.
    let clash = dir.join("clash.S");
    let text = format!(
        "{}\n        .globl ipuc_step_0\nipuc_step_0:\n        nop\n",
        ipuc_core::runtime::SOURCE
    );
    std::fs::write(&clash, &text).unwrap();
    let o = compile(&clash);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let line = error_line(&o);
    assert!(
        line.ends_with(&format!(
            "symbol 'ipuc_step_0' is already defined at {}:{}:1",
            clash.display(),
            line_of(&text, "ipuc_step_0:")
        )),
        "{line}"
    );
}

#[test]
fn a_held_device_lock_blocks_a_second_run_until_released() {
    let dir = scratch("lock");
    let lock = dir.join("device.lock");
    let held = std::fs::File::create(&lock).unwrap();
    held.lock().unwrap();
    let mut child = ipuc()
        .args(["hw-check", "-v", "--device-lock", lock.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert_eq!(
        first,
        format!(
            "device: waiting for the lock on {} (another run holds it)…",
            lock.display()
        )
    );
    // It cannot have taken the lock: we still hold it.
    assert!(child.try_wait().unwrap().is_none());
    drop(held);
    let next = lines.next().unwrap().unwrap();
    assert_eq!(
        next,
        format!("device: holding the lock on {}", lock.display())
    );
    for _ in lines {}
    assert!(child.wait().unwrap().success());
}

#[test]
fn seed_aliases_and_profile_file() {
    let dir = scratch("alias");
    let prof = dir.join("out/model.ipuprof");
    let emb = dir.join("emb.npy");
    let o = run(&[
        "run",
        "--vit-small",
        "--vit-layers",
        "1",
        "--planning-tiles",
        "16",
        "--profile-output",
        prof.to_str().unwrap(),
        "--output-embedding",
        emb.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("model: siglip-small"), "{}", stdout(&o));
    assert!(prof.is_file(), "the profile is a file, not a directory");
    // Its viewer is named after it, as the seeds name it.
    assert!(dir.join("out/model.html").is_file());
    assert!(dir.join("out/model.operations.json").is_file());
    assert!(dir.join("out/model.trace.json.gz").is_file());
    assert!(dir.join("out/model.index.html").is_file());
    assert!(
        !stderr(&o).contains("replacing"),
        "nothing to replace: {}",
        stderr(&o)
    );
    // A second run under another name in the same directory shares no file
    // with the first; a rerun under the same name says what it replaces.
    let profile_run = |name: &str| {
        run(&[
            "run",
            "--vit-small",
            "--vit-layers",
            "1",
            "--planning-tiles",
            "16",
            "--profile-output",
            dir.join("out").join(name).to_str().unwrap(),
        ])
    };
    let first = std::fs::read(dir.join("out/model.operations.json")).unwrap();
    let o2 = profile_run("other.ipuprof");
    assert!(o2.status.success(), "{}", stderr(&o2));
    assert!(!stderr(&o2).contains("replacing"), "{}", stderr(&o2));
    assert!(dir.join("out/other.html").is_file() && dir.join("out/other.trace.json.gz").is_file());
    assert_eq!(
        std::fs::read(dir.join("out/model.operations.json")).unwrap(),
        first
    );
    let o3 = profile_run("model.ipuprof");
    assert!(o3.status.success(), "{}", stderr(&o3));
    assert!(
        stderr(&o3).contains("warning: replacing an earlier run's profile files (")
            && stderr(&o3).contains("model.trace.json.gz"),
        "{}",
        stderr(&o3)
    );
    assert!(
        stdout(&o).contains(&format!("to {}", emb.display())),
        "{}",
        stdout(&o)
    );
    assert!(emb.is_file());

    // The seeds' benchmark name is the So400m preset (checked without compiling).
    let o = run(&[
        "compile",
        "--workload",
        "siglip-vit-benchmark",
        "--vit-layers",
        "99",
    ]);
    assert!(
        error_line(&o).contains("the config has 27 layers"),
        "{}",
        error_line(&o)
    );
}

fn package_hash(o: &Output) -> String {
    stdout(o)
        .lines()
        .find_map(|l| l.strip_prefix("package: "))
        .and_then(|l| l.split("sha256 ").nth(1))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn build_flags_change_what_is_built() {
    let base = [
        "compile",
        "--vit-small",
        "--vit-layers",
        "1",
        "--planning-tiles",
        "16",
    ];
    let plain = run(&base);
    assert!(plain.status.success(), "{}", stderr(&plain));
    let h0 = package_hash(&plain);
    assert_eq!(h0.len(), 64, "{}", stdout(&plain));

    // A stream cap re-schedules the exchange rows: another package.
    let capped = run(&[&base[..], &["--exchange-stream-words", "8"]].concat());
    assert!(capped.status.success(), "{}", stderr(&capped));
    assert_ne!(package_hash(&capped), h0);

    // Optimization steps report the estimate before and after.
    let opt = run(&[
        &base[..],
        &[
            "-v",
            "--planning-beam-width",
            "1",
            "--optimization-steps",
            "4",
        ],
    ]
    .concat());
    assert!(opt.status.success(), "{}", stderr(&opt));
    let line = stdout(&opt)
        .lines()
        .find(|l| l.starts_with("optimization: "))
        .unwrap_or_default()
        .to_string();
    assert!(
        line.contains("estimated cycles") && line.contains("after"),
        "{}",
        stdout(&opt)
    );

    // The runtime source is what gets assembled: a broken one names itself.
    let dir = scratch("runtime-compile");
    let bad = dir.join("bad.S");
    std::fs::write(&bad, "        .text\n        notaninstruction $m0\n").unwrap();
    let o = run(&[&base[..], &["--runtime-source", bad.to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(4));
    assert!(
        error_line(&o).contains(bad.to_str().unwrap()),
        "{}",
        error_line(&o)
    );
    let o = run(&[&base[..], &["--runtime-source", "/nonexistent-ipuc.S"]].concat());
    assert_eq!(
        error_line(&o),
        "error: --runtime-source /nonexistent-ipuc.S: no such file"
    );
    assert!(!stderr(&o).contains("compile:"));
}

/// Issue #43: checkpoint and workload mistakes say what to do.
#[test]
fn checkpoint_and_workload_mistakes_say_what_to_do() {
    let o = run(&["compile", "--checkpoint", "./no-such-dir"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(
        error_line(&o),
        "error: ./no-such-dir: no such directory (--checkpoint takes a local HF checkpoint directory with config.json and model.safetensors)"
    );
    let o = run(&["compile", "--checkpoint", "google/siglip-base-patch16-224"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(
        error_line(&o),
        "error: google/siglip-base-patch16-224: no such directory; it looks like a Hugging Face Hub ID: download it first (e.g. with `huggingface-cli download google/siglip-base-patch16-224 --local-dir DIR`) and pass --checkpoint DIR"
    );
    // More layers than the checkpoint's config has: a usage error, as for presets.
    let vit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/towers/vit-f32");
    let o = run(&[
        "compile",
        "--checkpoint",
        vit.to_str().unwrap(),
        "--vit-layers",
        "5",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        error_line(&o),
        "error: --vit-layers 5 is outside 1..=2 (the config has 2 layers)"
    );
    let o = run(&["compile", "--workload", "siglip-smal"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        error_line(&o).starts_with(
            "error: unknown workload \"siglip-smal\" (did you mean \"siglip-small\"? known: "
        ),
        "{}",
        stderr(&o)
    );
}
