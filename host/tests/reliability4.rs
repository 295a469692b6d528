//! #44 "Reliability, round 4", as the user meets it: a FIFO in any
//! family's checkpoint, flag values that must be usage errors, outputs
//! pointed at inputs or at each other, a 250-byte output name, family
//! config names in errors, and a run's outputs replaced as one set even
//! when a signal lands among them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const IPUC: &str = env!("CARGO_BIN_EXE_ipuc");

fn towers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/towers")
}

fn siglip() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/siglip")
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("reliability4")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn spawn(args: &[&str], env: &[(&str, &str)]) -> Child {
    Command::new(IPUC)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ipuc runs")
}

/// Runs `ipuc args`, killing it after `seconds` (a hang fails the test
/// instead of stalling it).
fn ipuc_within(args: &[&str], seconds: u64) -> Output {
    let mut child = spawn(args, &[]);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("ipuc {args:?} still running after {seconds} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Expects exit `code`, no panic, and every needle in stderr.
#[track_caller]
fn rejects(args: &[&str], code: i32, needles: &[&str]) -> String {
    let out = ipuc_within(args, 60);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "ipuc {args:?}: {err}");
    assert!(!err.contains("panicked"), "ipuc {args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "ipuc {args:?}: {n:?} not in {err:?}");
    }
    err
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(s(path)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Item 1: a FIFO named `model.safetensors` in a checkpoint of every
/// family is refused at once by compile and run (the ViT path read its
/// header with a plain open and waited for a writer forever).
#[test]
fn a_fifo_in_any_familys_checkpoint_is_refused_at_once() {
    for (family, fixture) in [
        ("vit", towers().join("vit-f32")),
        ("clip", towers().join("clip-vision-f32")),
        ("dinov2", towers().join("dinov2-bf16")),
        ("siglip", siglip().join("vision-f16")),
    ] {
        let dir = scratch(&format!("fifo-{family}"));
        std::fs::copy(fixture.join("config.json"), dir.join("config.json")).unwrap();
        mkfifo(&dir.join("model.safetensors"));
        for cmd in ["compile", "run"] {
            rejects(
                &[cmd, "--checkpoint", s(&dir)],
                4,
                &["model.safetensors", "FIFO"],
            );
        }
    }
}

/// A copy of `fixture` whose `model.safetensors` holds one more vision
/// tensor, `extra`, which no parameter of the model reads.
fn checkpoint_with_extra_tensor(name: &str, fixture: &Path, extra: &str) -> PathBuf {
    let dir = scratch(name);
    std::fs::copy(fixture.join("config.json"), dir.join("config.json")).unwrap();
    let bytes = std::fs::read(fixture.join("model.safetensors")).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let data = &bytes[8 + n..];
    header[extra] = serde_json::json!({
        "dtype": "F32", "shape": [1], "data_offsets": [data.len(), data.len() + 4]
    });
    let text = header.to_string();
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&[0; 4]);
    std::fs::write(dir.join("model.safetensors"), out).unwrap();
    dir
}

/// Item 11: errors name the family's own config classes.
#[test]
fn errors_name_the_familys_config_class() {
    for (family, fixture, class) in [
        ("vit", towers().join("vit-f32"), "ViTConfig"),
        ("clip", towers().join("clip-vision-f32"), "CLIPVisionConfig"),
        ("dinov2", towers().join("dinov2-bf16"), "Dinov2Config"),
    ] {
        let dir =
            checkpoint_with_extra_tensor(&format!("extra-{family}"), &fixture, "embeddings.bogus");
        let err = rejects(
            &["compile", "--checkpoint", s(&dir)],
            4,
            &["embeddings.bogus", class],
        );
        assert!(!err.contains("SigLIP"), "{err}");
        // A `vision_config` that is not an object.
        let dir = scratch(&format!("vision-config-{family}"));
        let mut config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fixture.join("config.json")).unwrap())
                .unwrap();
        config["vision_config"] = serde_json::json!(5);
        std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
        std::fs::copy(
            fixture.join("model.safetensors"),
            dir.join("model.safetensors"),
        )
        .unwrap();
        let err = rejects(&["compile", "--checkpoint", s(&dir)], 4, &[class]);
        assert!(!err.contains("Siglip"), "{err}");
    }
}

/// Items 3, 7 and 8: flag values that can never work are usage errors
/// (exit 2) naming the flag, before any work.
#[test]
fn out_of_range_flag_values_are_usage_errors() {
    let small = ["--workload", "siglip-small"];
    for cmd in ["run", "compile"] {
        for extra in [
            &["--vit-batch", "0"][..],
            &["--vit-batch", "two"],
            &["--vit-batch", "18446744073709551616"],
            &["--image-size", "0"],
            &["--image-size", "13"],
            &["--planning-beam-width", "10000"],
            &["--planning-beam-width", "1025"],
            &["--optimization-steps", "4294967295"],
            &["--fp8-activation-scale", "3"],
            &[
                "--fp8-scale",
                "-4",
                "--fp8-weights-only",
                "--fp8-activation-scale",
                "1",
            ],
        ] {
            let args: Vec<&str> = [cmd].iter().chain(&small).chain(extra).copied().collect();
            rejects(&args, 2, &[extra[extra.len() - 2]]);
        }
    }
    for value in ["-1e-300", "-1e-45", "1e39", "-inf"] {
        let flag = format!("--diagnostic-rtol={value}");
        rejects(
            &["run", "--workload", "siglip-small", &flag],
            2,
            &["--diagnostic-rtol"],
        );
    }
    rejects(
        &[
            "run",
            "--workload",
            "siglip-small",
            "--planning-beam-width",
            "10000",
        ],
        2,
        &["1..=1024"],
    );
}

/// Item 4: an output at an input's path, or two outputs at one path, is
/// a usage error naming both, and the input is left as it was.
#[test]
fn an_output_over_an_input_or_another_output_is_refused() {
    let dir = scratch("same-path");
    let keep = |name: &str| {
        let p = dir.join(name);
        std::fs::write(&p, format!("precious {name}")).unwrap();
        p
    };
    let a = keep("a.ipuc");
    let x = keep("x.npy");
    let src = keep("k.S");
    let c = dir.join("c.ipuc");
    let cases: Vec<(Vec<String>, [&str; 2])> = vec![
        (
            vec![
                "exec".into(),
                s(&a).into(),
                "--summary-json".into(),
                s(&a).into(),
            ],
            ["--summary-json", "PACKAGE"],
        ),
        (
            vec![
                "exec".into(),
                s(&a).into(),
                "--output-embedding".into(),
                s(&a).into(),
            ],
            ["--output-embedding", "PACKAGE"],
        ),
        (
            vec![
                "run".into(),
                "--workload".into(),
                "siglip-small".into(),
                "--input".into(),
                s(&x).into(),
                "--output-embedding".into(),
                // The same file by another spelling.
                format!("{}/../same-path/x.npy", s(&dir)),
            ],
            ["--output-embedding", "--input"],
        ),
        (
            vec![
                "compile".into(),
                "--workload".into(),
                "siglip-small".into(),
                "--package".into(),
                s(&c).into(),
                "--summary-json".into(),
                s(&c).into(),
            ],
            ["--package", "--summary-json"],
        ),
        (
            vec![
                "run".into(),
                "--workload".into(),
                "siglip-small".into(),
                "--profile-output".into(),
                s(&dir.join("p.ipuprof")).into(),
                "--plan-output".into(),
                s(&dir.join("p.html")).into(),
            ],
            ["--profile-output", "--plan-output"],
        ),
        (
            vec!["asm".into(), s(&src).into(), "-o".into(), s(&src).into()],
            ["-o", "FILE"],
        ),
    ];
    for (args, flags) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        rejects(&args, 2, &flags);
    }
    for (p, name) in [(&a, "a.ipuc"), (&x, "x.npy"), (&src, "k.S")] {
        assert_eq!(
            std::fs::read_to_string(p).unwrap(),
            format!("precious {name}")
        );
    }
    assert!(!c.exists());
}

/// Item 9: a valid output name of 250 bytes is written.
#[test]
fn a_250_byte_output_name_is_written() {
    let dir = scratch("long-name");
    let src = dir.join("ok.S");
    std::fs::write(&src, "nop\n").unwrap();
    let out = dir.join("o".repeat(246) + ".bin");
    let o = ipuc_within(&["asm", s(&src), "-o", s(&out)], 60);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&out).unwrap().len(), 4);
}

/// The files' contents now, by name.
fn contents(files: &[PathBuf]) -> Vec<Vec<u8>> {
    files
        .iter()
        .map(|f| std::fs::read(f).unwrap_or_default())
        .collect()
}

fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

/// Item 10: a run's outputs are one set. SIGTERM while a later file of the
/// set is being written leaves every previous file; SIGTERM after the
/// first file of the set was renamed waits for the last rename, so every
/// file is new. Never a mix, never a temporary left.
#[test]
fn a_signal_among_a_runs_outputs_leaves_one_whole_set() {
    let dir = scratch("sets");
    let files = [
        dir.join("plan.txt"),
        dir.join("out.ipuc"),
        dir.join("summary.json"),
    ];
    let args = [
        "compile",
        "--workload",
        "siglip-small",
        "--vit-layers",
        "1",
        "--planning-tiles",
        "16",
        "--plan-output",
        s(&files[0]),
        "--package",
        s(&files[1]),
        "--summary-json",
        s(&files[2]),
    ];
    let reset = || {
        for f in &files {
            std::fs::write(f, "old").unwrap();
        }
    };
    let pause = [("IPUC_TEST_WRITE_PAUSE_MS", "300")];
    let wait_for = |child: &mut Child, ready: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !ready() {
            assert!(child.try_wait().unwrap().is_none(), "ended before the aim");
            assert!(Instant::now() < deadline, "never reached the aim");
            std::thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        child.wait().unwrap()
    };
    // Staging: the package's temporary exists (the plan's is complete).
    reset();
    let mut child = spawn(&args, &pause);
    let status = wait_for(&mut child, &|| {
        temporaries(&dir)
            .iter()
            .any(|t| t.starts_with(".out.ipuc."))
    });
    assert_eq!(status.code(), None, "ended by the signal");
    assert_eq!(contents(&files), vec![b"old".to_vec(); 3]);
    assert!(temporaries(&dir).is_empty(), "{:?}", temporaries(&dir));
    // Committing: the first file was replaced.
    reset();
    let mut child = spawn(&args, &pause);
    let status = wait_for(&mut child, &|| {
        std::fs::read(&files[0]).is_ok_and(|b| b != b"old")
    });
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(libc::SIGTERM),
        "the deferred signal ends it"
    );
    let now = contents(&files);
    assert!(now.iter().all(|b| b != b"old"), "a mixed set");
    ipuc_target::package::read(&now[1]).unwrap();
    assert!(temporaries(&dir).is_empty(), "{:?}", temporaries(&dir));
}

/// Item 10: an output of the set that cannot be put in place (a directory
/// where `memory.png` goes) drops the whole set: the previous package,
/// plan and maps stay, and the run fails as bad input.
#[test]
fn an_output_that_cannot_be_placed_drops_the_whole_set() {
    let dir = scratch("set-fails");
    let mem = dir.join("mem");
    std::fs::create_dir_all(mem.join("memory.png")).unwrap();
    let files = [
        dir.join("out.ipuc"),
        dir.join("plan.txt"),
        mem.join("memory.html"),
    ];
    for f in &files {
        std::fs::write(f, "old").unwrap();
    }
    let out = ipuc_within(
        &[
            "compile",
            "--workload",
            "siglip-small",
            "--vit-layers",
            "1",
            "--planning-tiles",
            "16",
            "--package",
            s(&files[0]),
            "--plan-output",
            s(&files[1]),
            "--memory-profile-directory",
            s(&mem),
        ],
        120,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("memory.png is a directory now"), "{err}");
    assert_eq!(contents(&files), vec![b"old".to_vec(); 3]);
    assert!(temporaries(&dir).is_empty() && temporaries(&mem).is_empty());
}
