//! `ipuc run` as a user types it: the README's FP8 example validates against
//! the device-numerics reference and passes; `--reference-fp32` adds the FP32
//! comparison; `--reference-inferences N` runs N resident inferences, each
//! validated; out-of-range values are rejected before any work.

use std::process::Command;

fn ipuc(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ipuc"))
        .args(args)
        .output()
        .expect("running ipuc")
}

#[test]
fn readme_fp8_example_passes_with_fp32_figures_for_every_inference() {
    let out = ipuc(&[
        "run",
        "--workload",
        "siglip-small",
        "--vit-layers",
        "2",
        "--fp8-scale",
        "-4",
        "--reference-run",
        "--reference-fp32",
        "--reference-inferences",
        "2",
        "--planning-tiles",
        "64",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stderr.contains("package loaded once"), "{stderr}");
    for i in 0..2 {
        assert!(
            stdout.contains(&format!("validation[{i}]: PASS")),
            "inference {i}:\n{stdout}"
        );
        for output in ["last_hidden_state", "pooler_output"] {
            let device = format!("validation[{i}] {output}: max abs error ");
            let line = |suffix: &str| {
                stdout
                    .lines()
                    .any(|l| l.starts_with(&device) && l.contains(suffix))
            };
            assert!(line("vs the device-numerics reference"), "{stdout}");
            assert!(line("vs the FP32 reference"), "{stdout}");
        }
    }
    assert!(!stdout.contains("validation[2]"), "{stdout}");
    assert!(
        stdout.contains("words moved by the exchange fabric"),
        "{stdout}"
    );
    assert!(stdout.contains("memory peak: "), "{stdout}");
}

#[test]
fn zero_inferences_are_rejected_with_the_allowed_range() {
    let out = ipuc(&[
        "run",
        "--workload",
        "siglip-small",
        "--reference-run",
        "--reference-inferences",
        "0",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("0 is out of range (allowed: 1 or more)"),
        "{stderr}"
    );
}

#[test]
fn fp32_figures_need_a_reference_run() {
    let out = ipuc(&["run", "--workload", "siglip-small", "--reference-fp32"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--reference-run"), "{stderr}");
}

#[test]
fn a_memory_rejection_still_writes_the_run_summary() {
    let dir = std::env::temp_dir().join(format!("ipuc-cli-summary-{}", std::process::id()));
    let path = dir.join("summary.json");
    let out = ipuc(&[
        "run",
        "--workload",
        "siglip-small",
        "--vit-layers",
        "27",
        "--planning-tiles",
        "16",
        "--reference-run",
        "--memory-profile-directory",
        dir.to_str().unwrap(),
        "--summary-json",
        path.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "27 layers do not fit on 16 tiles");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(summary["result"], "rejected", "{summary}");
    assert_eq!(summary["layers"], 27);
    assert_eq!(summary["rejection"]["stage"], "planning");
    assert!(summary["rejection"]["bytes_per_tile"].as_u64().unwrap() > 586_960);
    assert!(summary["cropped_cycles"].is_null());
    std::fs::remove_dir_all(&dir).ok();
}
