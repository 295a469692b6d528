//! Issue #27 at the command line: a package runs with nothing but
//! `--reference-run` (it describes its model), a contradicting flag is a
//! usage error naming both values, exit codes say what happened, `-q`
//! prints only the result line, `--summary-json -` is the JSON on stdout,
//! and every JSON artifact names its schema.

mod common;
use common::{ipuc, rejection_command};

use std::path::{Path, PathBuf};

use serde_json::Value;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ipuc-cli-package-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_valid(schema: &str, doc: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(format!("{schema}.schema.json"));
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "{}: {errors:#?}\n{doc:#}",
        path.display()
    );
}

/// A 2-layer FP8 package on 16 tiles, compiled once per test.
/// A float32 NCHW `.npy` of `shape`, every element `value`.
fn write_pixels_npy(path: &Path, shape: [usize; 4], value: f32) {
    let dims = shape.map(|d| d.to_string()).join(", ");
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({dims}), }}");
    // Magic (6) + version (2) + length (2) + header + newline, padded to 64.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for _ in 0..shape.iter().product::<usize>() {
        bytes.extend_from_slice(&value.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

fn fp8_package(dir: &Path) -> PathBuf {
    let package = dir.join("model.ipuc");
    let out = ipuc(&[
        "compile",
        "--workload",
        "siglip-small",
        "--vit-layers",
        "2",
        "--fp8-scale",
        "-4",
        "--planning-tiles",
        "16",
        "--package",
        package.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    package
}

#[test]
fn exec_needs_only_the_package_and_rejects_a_contradicting_flag() {
    let dir = scratch("exec");
    let package = fp8_package(&dir);
    let p = package.to_str().unwrap();

    let out = ipuc(&["exec", p, "--reference-run"]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("model: siglip-small, 2 of 27 layers, image 28, FP8 x FP8 GEMMs (weights scale -4, activations 0)"),
        "{stdout}"
    );
    let result: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("result: "))
        .collect();
    assert_eq!(result.len(), 1, "{stdout}");
    assert!(
        result[0].starts_with("result: PASS siglip-small"),
        "{stdout}"
    );
    // The digest exec prints is the package digest compile printed.
    let bytes = std::fs::read(&package).unwrap();
    assert!(
        stdout.contains(&ipuc_target::package::digest_hex(&bytes)),
        "{stdout}"
    );
    // Default lines stay short.
    for line in stdout.lines() {
        assert!(line.chars().count() <= 120, "longer than 120: {line}");
    }

    // A flag that contradicts the package: usage error naming both values.
    let out = ipuc(&["exec", p, "--reference-run", "--fp8-scale", "-3"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "--fp8-scale -3 contradicts the package, which was compiled with --fp8-scale -4"
        ),
        "{stderr}"
    );
    let out = ipuc(&["exec", p, "--vit-layers", "27"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(
        "--vit-layers 27 contradicts the package, which was compiled with --vit-layers 2"
    ));
    // The model flags are the compile's own (declared once), so exec
    // parses them alike and checks each against the package.
    let out = ipuc(&["exec", p, "--fp8-weights-only"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(
        "--fp8-weights-only (set) contradicts the package, which was compiled with FP8 × FP8 GEMMs"
    ));
    let out = ipuc(&["exec", p, "--vit-batch", "max"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("a package's batch is fixed"));
    // Agreeing flags are accepted.
    let out = ipuc(&[
        "exec",
        p,
        "-q",
        "--workload",
        "siglip-small",
        "--fp8-scale",
        "-4",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // inspect --json shows the description and matches its schema.
    let out = ipuc(&["inspect", p, "--json"]);
    assert!(out.status.success());
    let view: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid("package", &view);
    assert_eq!(view["description"]["model"]["fp8_scale"], -4);
    assert_eq!(view["description"]["model"]["seed"], 0);
    assert_eq!(view["description"]["build"]["planning_tiles"], 16);
    std::fs::remove_dir_all(&dir).ok();
}

/// `ipuc ARGS` run in `dir`.
fn ipuc_in(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ipuc"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .output()
        .expect("running ipuc")
}

/// A package compiled from a checkpoint named by a relative path runs from
/// any directory (the path is recorded absolute); a moved checkpoint is a
/// clear error pointing at --checkpoint, which then finds it, and a
/// changed one fails its digest check.
#[test]
fn exec_finds_the_checkpoint_from_anywhere_and_checks_its_digest() {
    let dir = scratch("checkpoint");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/siglip/vision-f16");
    let ck = dir.join("ck");
    std::fs::create_dir_all(&ck).unwrap();
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(fixture.join(f), ck.join(f)).unwrap();
    }
    let out = ipuc_in(
        &dir,
        &[
            "compile",
            "--checkpoint",
            "ck",
            "--planning-tiles",
            "16",
            "--package",
            "ck.ipuc",
            "-q",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let package = dir.join("ck.ipuc");
    let p = package.to_str().unwrap();
    let elsewhere = std::env::temp_dir();
    let out = ipuc_in(&elsewhere, &["exec", p, "--reference-run", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("result: PASS"),
        "{}",
        text(&out.stdout)
    );

    let moved = dir.join("moved");
    std::fs::rename(&ck, &moved).unwrap();
    let out = ipuc_in(&elsewhere, &["exec", p, "--reference-run", "-q"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("which is not there now: give its new place with --checkpoint DIR"),
        "{stderr}"
    );
    let m = moved.to_str().unwrap();
    let out = ipuc_in(
        &elsewhere,
        &["exec", p, "--reference-run", "-q", "--checkpoint", m],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // One byte of the weights changed: the digest check names both.
    let weights = moved.join("model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&weights, bytes).unwrap();
    let out = ipuc_in(
        &elsewhere,
        &["exec", p, "--reference-run", "--checkpoint", m],
    );
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("but the package was compiled from SHA-256"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn exit_codes_say_what_happened() {
    let dir = scratch("codes");
    let package = fp8_package(&dir);
    let p = package.to_str().unwrap();
    let code = |args: &[&str]| {
        let out = ipuc(args);
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    // 1: validation FAIL, with its result line. The device matches its
    // reference bit for bit, so a FAIL takes an output that fails any
    // tolerance: pixels inside FP16's range whose patch embedding is not.
    let pixels = dir.join("overflowing.npy");
    write_pixels_npy(&pixels, [1, 3, 28, 28], 60_000.0);
    let (c, out, err) = code(&[
        "exec",
        p,
        "--reference-run",
        "--input",
        pixels.to_str().unwrap(),
    ]);
    assert_eq!(c, Some(1), "{out}\n{err}");
    assert!(out.lines().any(|l| l.starts_with("result: FAIL ")), "{out}");
    assert!(
        err.contains("non-finite") || out.contains("non-finite"),
        "{out}\n{err}"
    );
    // 0 without validation, and the result line says so.
    let (c, out, _) = code(&["exec", p]);
    assert_eq!(c, Some(0));
    assert!(out.contains("result: NOT VALIDATED"), "{out}");
    // 2: usage, from clap and from checks after parsing.
    assert_eq!(code(&["run", "--workload", "foo"]).0, Some(2));
    assert_eq!(
        code(&["run", "--workload", "siglip-small", "--vit-layers", "30"]).0,
        Some(2)
    );
    assert_eq!(
        code(&[
            "compile",
            "--workload",
            "siglip-small",
            "--planning-tiles",
            "0"
        ])
        .0,
        Some(2)
    );
    assert_eq!(code(&["run", "--bogus"]).0, Some(2));
    // 3: does not fit (the planner's rejection), reports written.
    let rejected = dir.join("rejected");
    let mut args = rejection_command("compile", "planner", &["--memory-profile-directory"]);
    args.push(rejected.to_str().unwrap());
    let (c, out, err) = code(&args);
    assert_eq!(c, Some(3), "{err}");
    assert!(
        out.contains("result: REJECTED (does not fit) (exit 3)"),
        "{out}"
    );
    // 4: bad input.
    let bad = dir.join("bad.ipuc");
    std::fs::write(
        &bad,
        b"not a package at all, but long enough to have a digest",
    )
    .unwrap();
    assert_eq!(code(&["exec", bad.to_str().unwrap()]).0, Some(4));
    assert_eq!(
        code(&["exec", dir.join("missing.ipuc").to_str().unwrap()]).0,
        Some(4)
    );
    // The table is in --help.
    let (c, out, _) = code(&["--help"]);
    assert_eq!(c, Some(0));
    assert!(
        out.contains("Exit status:") && out.contains("3  does not fit"),
        "{out}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn quiet_prints_only_the_result_and_summary_json_dash_is_stdout() {
    let dir = scratch("quiet");
    let package = fp8_package(&dir);
    let p = package.to_str().unwrap();

    let out = ipuc(&["exec", p, "--reference-run", "-q"]);
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.starts_with("result: PASS "), "{stdout}");
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));

    // `reference` ends with its own result line too, the only one under -q.
    let pixels = dir.join("pixels.npy");
    write_pixels_npy(&pixels, [1, 3, 28, 28], 0.25);
    let embedding = dir.join("embedding.npy");
    let out = ipuc(&[
        "reference",
        "--workload",
        "siglip-small",
        "--vit-layers",
        "1",
        "--input",
        pixels.to_str().unwrap(),
        "--output-embedding",
        embedding.to_str().unwrap(),
        "-q",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.starts_with("result: REFERENCE embedding [1, 144] in "),
        "{stdout}"
    );

    // `--summary-json -`: stdout is exactly the JSON, valid against its schema.
    for args in [
        vec!["exec", p, "--reference-run", "--summary-json", "-"],
        vec![
            "compile",
            "--workload",
            "siglip-small",
            "--vit-layers",
            "1",
            "--planning-tiles",
            "16",
            "--summary-json",
            "-",
        ],
    ] {
        let out = ipuc(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let summary: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{args:?}: stdout is not JSON ({e}):\n{}", text(&out.stdout))
        });
        assert_valid("summary", &summary);
        assert_eq!(summary["schema"], "ipuc.run-summary");
        assert_eq!(summary["command"], args[0]);
        assert_eq!(summary["command_line"][1], args[0]);
        assert!(summary["ipuc_version"].as_str().unwrap().contains("commit"));
        assert_eq!(summary["flags"]["planning_tiles"], 16);
        assert!(summary["runtime_source_sha256"].is_string(), "{summary:#}");
        assert!(summary["package_sha256"].is_string(), "{summary:#}");
    }
    let out = ipuc(&["exec", p, "--reference-run", "--summary-json", "-"]);
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["result"], "PASS");
    assert_eq!(summary["flags"]["fp8_scale"], -4);
    assert_eq!(summary["flags"]["vit_layers"], 2);
    assert_eq!(
        summary["package_sha256"],
        ipuc_target::package::digest_hex(&std::fs::read(&package).unwrap())
    );
    // The report went to stderr instead.
    assert!(
        text(&out.stderr).contains("result: PASS"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn version_completions_and_man_page() {
    let out = ipuc(&["--version"]);
    let v = text(&out.stdout);
    assert!(
        v.starts_with("ipuc 0.1.0 (commit ") && v.contains(" build)"),
        "{v}"
    );
    let out = ipuc(&["completions", "bash"]);
    assert!(out.status.success());
    assert!(
        text(&out.stdout).contains("_ipuc()"),
        "{}",
        text(&out.stdout)
    );
    let out = ipuc(&["man"]);
    assert!(out.status.success());
    let man = text(&out.stdout);
    assert!(man.starts_with(".ie") || man.contains(".TH ipuc"), "{man}");
}
