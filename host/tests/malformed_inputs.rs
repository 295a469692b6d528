//! The malformed-input suite: every class of bad input a user can give the
//! `ipuc` binary ends with a clear error — the exit status (4 for a rejected
//! input, 2 for a rejected flag value, 3 for a model larger than the
//! device; `ipuc::exit`), no panic, and a message naming the file and
//! what is wrong. Each case is cheap: all are rejected before compiling.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const IPUC: &str = env!("CARGO_BIN_EXE_ipuc");

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/siglip")
}

/// A fresh scratch directory for one case.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("malformed")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn ipuc(args: &[&str]) -> Output {
    Command::new(IPUC)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("ipuc runs")
}

/// Runs `ipuc args`, expects exit status `code`, no panic, and every needle
/// in stderr; returns stderr.
#[track_caller]
fn rejects(args: &[&str], code: i32, needles: &[&str]) -> String {
    let out = ipuc(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "ipuc {args:?}: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "ipuc {args:?} panicked: {err}"
    );
    for n in needles {
        assert!(err.contains(n), "ipuc {args:?}: {n:?} not in {err:?}");
    }
    err
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A copy of the small `vision-f16` checkpoint with `config.json` field
/// `key` set to the JSON `value`.
fn checkpoint_with(name: &str, key: &str, value: &str) -> PathBuf {
    let src = fixtures().join("vision-f16");
    let dir = scratch(name);
    std::fs::copy(src.join("model.safetensors"), dir.join("model.safetensors")).unwrap();
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("config.json")).unwrap()).unwrap();
    config[key] = serde_json::from_str(value).unwrap();
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    dir
}

#[test]
fn huge_config_dimensions_are_rejected_before_allocating() {
    for key in [
        "hidden_size",
        "intermediate_size",
        "num_channels",
        "image_size",
    ] {
        let dir = checkpoint_with(&format!("huge-{key}"), key, "1000000000");
        let config = dir.join("config.json");
        rejects(
            &["compile", "--checkpoint", s(&dir)],
            3,
            &[
                s(&config),
                "would need",
                "more than the 940572672 bytes of SRAM on all 1472 tiles",
                &format!("{key} 1000000000"),
            ],
        );
    }
}

#[test]
fn more_layers_than_the_checkpoint_holds_is_rejected_at_once() {
    let dir = checkpoint_with("layers", "num_hidden_layers", "30000");
    rejects(
        &["compile", "--checkpoint", s(&dir)],
        4,
        &[
            "model.safetensors",
            "30000 encoder layers are asked for",
            "holds 2",
        ],
    );
}

#[test]
fn bad_config_values_name_the_field_and_file() {
    let dir = checkpoint_with("eps", "layer_norm_eps", "1e308");
    rejects(
        &["compile", "--checkpoint", s(&dir)],
        4,
        &["config.json", "layer_norm_eps 1e308", "positive finite f32"],
    );
    let dir = checkpoint_with("heads", "num_attention_heads", "5");
    rejects(
        &["compile", "--checkpoint", s(&dir)],
        4,
        &["config.json", "not divisible by num_attention_heads 5"],
    );
    let dir = checkpoint_with("act", "hidden_act", "\"relu\"");
    rejects(
        &["compile", "--checkpoint", s(&dir)],
        4,
        &["config.json", "hidden_act \"relu\" is not supported"],
    );
    // #28: a value of the wrong type names its key.
    let dir = checkpoint_with("type", "image_size", "\"big\"");
    rejects(
        &["compile", "--checkpoint", s(&dir)],
        4,
        &["config.json", "`image_size`", "invalid type"],
    );
    let dir = checkpoint_with("json", "hidden_size", "1");
    std::fs::write(dir.join("config.json"), "{\"hidden_size\": ").unwrap();
    rejects(
        &["compile", "--checkpoint", s(&dir)],
        4,
        &["config.json", "EOF"],
    );
}

#[test]
fn huge_and_zero_batches_are_rejected_before_allocating() {
    let emb = scratch("huge-batch").join("emb.npy");
    let npy = fixtures().join("vision-f16/pixel_values.npy");
    rejects(
        &[
            "reference",
            "--workload",
            "siglip-small",
            "--vit-batch",
            "1099511627776",
            "--input",
            s(&npy),
            "--output-embedding",
            s(&emb),
        ],
        3,
        &["pixel input would need", "batch 1099511627776"],
    );
    // Batches the chip cannot hold do not fit (#41): the pixel input for
    // run, one tile per attention (image, head) pair for compile; found
    // before anything is sized or compiled.
    for batch in ["2147483648", "1099511627776"] {
        rejects(
            &["run", "--workload", "siglip-small", "--vit-batch", batch],
            3,
            &["pixel input would need", &format!("batch {batch}")],
        );
        rejects(
            &[
                "compile",
                "--workload",
                "siglip-small",
                "--vit-batch",
                batch,
            ],
            3,
            &["(image, head) pairs", "at most 736 images"],
        );
    }
    for batch in ["many", "1.5", "18446744073709551616"] {
        rejects(
            &["run", "--workload", "siglip-small", "--vit-batch", batch],
            2,
            &["--vit-batch"],
        );
    }
    rejects(
        &["run", "--workload", "siglip-small", "--vit-batch", "0"],
        2,
        &["--vit-batch must be at least 1"],
    );
}

#[test]
fn out_of_range_flags_are_rejected() {
    for (args, flag) in [
        (
            &[
                "run",
                "--workload",
                "siglip-small",
                "--planning-beam-width",
                "0",
            ][..],
            "--planning-beam-width",
        ),
        (
            &[
                "run",
                "--workload",
                "siglip-small",
                "--reference-inferences",
                "0",
            ][..],
            "--reference-inferences",
        ),
        (
            &[
                "run",
                "--workload",
                "siglip-small",
                "--planning-tiles",
                "1473",
            ][..],
            "--planning-tiles",
        ),
        (&["exchange", "bench", "--tiles", "0"][..], "--tiles"),
        (&["exchange", "bench", "--words", "0"][..], "--words"),
    ] {
        rejects(args, 2, &[flag, "invalid value"]);
    }
    rejects(
        &["exchange", "bench", "--tiles", "4", "--fanout", "4"],
        2,
        &["--fanout 4 needs more than 4 tiles"],
    );
}

#[test]
fn bad_images_and_inputs_name_the_file() {
    // An RGB image for a 1-channel model: rejected before any weights load.
    let dir = checkpoint_with("gray", "num_channels", "1");
    let png = fixtures().join("image/pattern.png");
    rejects(
        &["run", "--checkpoint", s(&dir), "--image", s(&png)],
        4,
        &["pattern.png", "num_channels = 1"],
    );
    // …and its weights do not match the config.
    rejects(
        &["compile", "--checkpoint", s(&dir)],
        4,
        &["model.safetensors", "[32, 3, 14, 14]", "[32, 1, 14, 14]"],
    );
    let dir = scratch("inputs");
    let garbage = dir.join("garbage.png");
    std::fs::write(&garbage, b"not an image at all").unwrap();
    rejects(
        &["run", "--workload", "siglip-small", "--image", s(&garbage)],
        4,
        &["garbage.png"],
    );
    let npy = dir.join("garbage.npy");
    std::fs::write(&npy, b"\x93NUMPY garbage").unwrap();
    rejects(
        &["run", "--workload", "siglip-small", "--input", s(&npy)],
        4,
        &["garbage.npy"],
    );
    // Values beyond FP16 would become infinities on the device.
    let big = dir.join("big.npy");
    ipuc::input::write_npy(&big, &[1, 3, 28, 28], &vec![1.0e6f32; 3 * 28 * 28]).unwrap();
    rejects(
        &["run", "--workload", "siglip-small", "--input", s(&big)],
        4,
        &["big.npy", "element 0", "outside the FP16 range"],
    );
}

/// A safetensors file: 8-byte header length, JSON header, data.
fn safetensors(header: &str, data: &[u8]) -> Vec<u8> {
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(header.as_bytes());
    b.extend_from_slice(data);
    b
}

#[test]
fn bad_checkpoints_name_the_file_and_tensor() {
    let dir = checkpoint_with("truncated", "hidden_size", "32");
    let file = dir.join("model.safetensors");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 100]).unwrap();
    rejects(
        &["compile", "--checkpoint", s(&dir)],
        4,
        &["model.safetensors"],
    );
    std::fs::write(&file, b"garbage").unwrap();
    rejects(
        &["compile", "--checkpoint", s(&dir)],
        4,
        &["model.safetensors"],
    );
    let n = 32 * 3 * 14 * 14;
    // An integer tensor (and one layer-1 tensor, so the layer count passes).
    let header = format!(
        "{{\"vision_model.embeddings.patch_embedding.weight\":{{\"dtype\":\"I32\",\"shape\":[32,3,14,14],\"data_offsets\":[0,{}]}},\
          \"vision_model.encoder.layers.1.layer_norm1.weight\":{{\"dtype\":\"F32\",\"shape\":[32],\"data_offsets\":[{},{}]}}}}",
        4 * n,
        4 * n,
        4 * n + 128
    );
    std::fs::write(&file, safetensors(&header, &vec![0u8; 4 * n + 128])).unwrap();
    rejects(
        &["compile", "--checkpoint", s(&dir)],
        4,
        &["model.safetensors", "patch_embedding.weight", "dtype I32"],
    );
}

#[test]
fn bad_assembly_is_an_error_at_file_line_col() {
    let dir = scratch("asm");
    let out = dir.join("out.bin");
    let cases = [
        ("mnemonic.S", "frobnicate $m0\n", "mnemonic.S:1:1"),
        (
            "overflow.S",
            "nop\n.long (0x4000000000000000 * 4) + 5\n",
            "overflow.S:2:27: arithmetic overflow in expression",
        ),
        (
            "space.S",
            ".space 0x80000\n.space 0x80000\n",
            "space.S:2:1: the image grows to 1048576 bytes here, more than a tile's 638976 bytes",
        ),
    ];
    for (name, src, needle) in cases {
        let file = dir.join(name);
        std::fs::write(&file, src).unwrap();
        rejects(&["asm", s(&file), "-o", s(&out)], 4, &[needle]);
    }
    let ok = dir.join("ok.S");
    std::fs::write(&ok, "nop\n").unwrap();
    rejects(
        &["asm", s(&ok), "-o", s(&out), "--at", "0x4C011"],
        4,
        &["ok.S", "link address 0x4c011 is not 4-byte aligned"],
    );
    rejects(
        &["asm", s(&ok), "-o", s(&out), "--at", "0x0"],
        4,
        &["ok.S", "does not lie inside tile SRAM"],
    );
    let out_ok = ipuc(&["asm", s(&ok), "-o", s(&out), "--at", "0x4C014"]);
    assert!(out_ok.status.success());
}

#[test]
fn tampered_packages_are_rejected() {
    use ipuc_target::package::{self, Package};
    let dir = scratch("package");
    let bytes = package::write(&Package::new("malformed-suite")).unwrap();
    let digest = package::digest_hex(&bytes);
    let good = dir.join("good.pkg");
    std::fs::write(&good, &bytes).unwrap();
    let out = ipuc(&["inspect", s(&good)]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains(&digest));
    let bad = dir.join("bad.pkg");
    for at in [12, bytes.len() / 2, bytes.len() - 1] {
        let mut b = bytes.clone();
        b[at] ^= 0x10;
        std::fs::write(&bad, &b).unwrap();
        rejects(
            &["inspect", s(&bad)],
            4,
            &["bad.pkg", "package digest mismatch", &digest],
        );
    }
    std::fs::write(&bad, &bytes[..20]).unwrap();
    rejects(&["inspect", s(&bad)], 4, &["bad.pkg", "header and digest"]);
    std::fs::write(&bad, b"\x89PNG\r\n\x1a\n and more bytes than a header").unwrap();
    rejects(&["inspect", s(&bad)], 4, &["bad.pkg", "bad magic"]);
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    let dir = scratch("pipe");
    let src = dir.join("long.S");
    std::fs::write(&src, "nop\n".repeat(40_000)).unwrap();
    let out = dir.join("long.bin");
    let mut child = Command::new(IPUC)
        .args(["asm", s(&src), "-o", s(&out), "--listing"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The read end is closed here (like `| head -c 16`).
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(err.is_empty(), "stderr: {err}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert!(
            status.success() || status.signal() == Some(libc::SIGPIPE),
            "{status:?}"
        );
    }
}

/// #28: flags whose values used to pass silently (an infinite tolerance
/// passed everything, a huge sync latency wrapped the cycle count).
#[test]
fn numeric_flags_have_checked_ranges() {
    for (flag, value) in [
        ("--diagnostic-atol", "inf"),
        ("--diagnostic-atol", "NaN"),
        ("--diagnostic-atol", "-1"),
        ("--diagnostic-rtol", "inf"),
        ("--sync-cycles", "18446744073709551615"),
        ("--reference-inferences", "4294967295"),
    ] {
        let arg = format!("{flag}={value}");
        rejects(
            &["run", "--workload", "siglip-small", &arg],
            2,
            &[flag, "invalid value"],
        );
    }
    rejects(
        &["inspect", "x.ipuc", "--tile", "99999"],
        2,
        &["--tile", "invalid value"],
    );
    let dir = scratch("defsym");
    let ok = dir.join("ok.S");
    std::fs::write(&ok, "nop\n").unwrap();
    let out = dir.join("out.bin");
    // A malformed --defsym is a flag value: a usage error, like clap's own.
    rejects(
        &["asm", s(&ok), "-o", s(&out), "--defsym", "=5"],
        2,
        &["--defsym '=5'", "is not a symbol name"],
    );
    rejects(
        &["asm", s(&ok), "-o", s(&out), "--defsym", "x="],
        2,
        &["--defsym 'x='", "value ''"],
    );
}

/// A copy of the F32 fixture checkpoint with element 0 of `tensor` set to
/// `value`.
fn f32_checkpoint_with_value(name: &str, tensor: &str, value: f32) -> PathBuf {
    let src = fixtures().join("vision-noprefix-f32");
    let dir = scratch(name);
    std::fs::copy(src.join("config.json"), dir.join("config.json")).unwrap();
    let mut bytes = std::fs::read(src.join("model.safetensors")).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let start = header[tensor]["data_offsets"][0].as_u64().unwrap() as usize + 8 + n;
    bytes[start..start + 4].copy_from_slice(&value.to_le_bytes());
    std::fs::write(dir.join("model.safetensors"), bytes).unwrap();
    dir
}

/// #28: a weight FP16 storage cannot hold gave an all-NaN embedding and
/// exit 0; now it is an error naming the tensor and the value.
#[test]
fn weights_outside_their_storage_type_are_rejected() {
    let dir = f32_checkpoint_with_value("fp16-overflow", "encoder.layers.0.mlp.fc1.weight", 1.0e6);
    rejects(
        &["compile", "--checkpoint", s(&dir)],
        4,
        &[
            "encoder.layers.0.mlp.fc1.weight",
            "1000000",
            "element 0",
            "F16",
        ],
    );
    let dir = f32_checkpoint_with_value(
        "nan-weight",
        "encoder.layers.0.layer_norm1.weight",
        f32::NAN,
    );
    rejects(
        &["compile", "--checkpoint", s(&dir)],
        4,
        &["layer_norm1.weight", "non-finite value at element 0"],
    );
}

/// #28: what is not a regular file, or is larger than anything useful, is
/// refused at once (it used to hang on a FIFO and read /dev/zero until
/// memory ran out).
#[test]
fn special_files_and_oversized_inputs_are_refused_at_once() {
    let dir = scratch("special");
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let zero = dir.join("zero");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let t = std::time::Instant::now();
    for (path, what) in [(&fifo, "FIFO"), (&zero, "character device")] {
        let p = s(path);
        rejects(&["inspect", p], 4, &[p, what]);
        rejects(
            &["run", "--workload", "siglip-small", "--image", p],
            4,
            &[p, what],
        );
        rejects(
            &["run", "--workload", "siglip-small", "--input", p],
            4,
            &[p, what],
        );
        rejects(&["asm", p, "-o", s(&dir.join("o.bin"))], 4, &[p, what]);
        rejects(
            &[
                "compile",
                "--workload",
                "siglip-small",
                "--runtime-source",
                p,
            ],
            4,
            &[p, what],
        );
        rejects(
            &["exec", p, "--workload", "siglip-small", "--device-lock", p],
            4,
            &[p, what],
        );
    }
    // A checkpoint whose files are links to /dev/zero.
    let ck = scratch("zero-checkpoint");
    std::os::unix::fs::symlink("/dev/zero", ck.join("config.json")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", ck.join("model.safetensors")).unwrap();
    rejects(
        &["compile", "--checkpoint", s(&ck)],
        4,
        &["character device"],
    );
    // 5 GiB sparse files: a safetensors whose header contradicts its
    // length, and one with the package magic.
    let sparse = scratch("sparse");
    let st = sparse.join("model.safetensors");
    std::fs::write(
        &st,
        safetensors(
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
            &[0; 4],
        ),
    )
    .unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&st)
        .unwrap()
        .set_len(5 << 30)
        .unwrap();
    std::fs::copy(
        fixtures().join("vision-f16/config.json"),
        sparse.join("config.json"),
    )
    .unwrap();
    rejects(
        &["compile", "--checkpoint", s(&sparse)],
        4,
        &["model.safetensors", "after the last tensor's data"],
    );
    let pkg = sparse.join("big.ipuc");
    std::fs::write(&pkg, ipuc_target::package::MAGIC).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&pkg)
        .unwrap()
        .set_len(5 << 30)
        .unwrap();
    rejects(&["inspect", s(&pkg)], 4, &["big.ipuc", "more than the"]);
    assert!(t.elapsed().as_secs() < 30, "took {:?}", t.elapsed());
}

/// #28: an output path that cannot be written fails before the compile,
/// and a symlink at an output path is replaced, its target untouched.
#[test]
fn outputs_are_checked_first_and_written_atomically() {
    let dir = scratch("outputs");
    let t = std::time::Instant::now();
    rejects(
        &[
            "run",
            "--workload",
            "siglip-small",
            "--package",
            "/proc/ipuc-no/x.ipuc",
        ],
        4,
        &["--package /proc/ipuc-no/x.ipuc", "does not exist"],
    );
    std::fs::create_dir(dir.join("isdir")).unwrap();
    rejects(
        &[
            "run",
            "--workload",
            "siglip-small",
            "--summary-json",
            s(&dir.join("isdir")),
        ],
        4,
        &["--summary-json", "is a directory"],
    );
    assert!(
        t.elapsed().as_secs() < 10,
        "checked late: {:?}",
        t.elapsed()
    );
    let src = dir.join("ok.S");
    std::fs::write(&src, "nop\n").unwrap();
    let target = dir.join("precious.bin");
    std::fs::write(&target, b"keep").unwrap();
    let link = dir.join("out.bin");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert!(ipuc(&["asm", s(&src), "-o", s(&link)]).status.success());
    assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
    assert_eq!(std::fs::read(&link).unwrap().len(), 4);
    let temporaries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(temporaries.is_empty(), "{temporaries:?}");
}
