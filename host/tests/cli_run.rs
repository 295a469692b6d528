//! `ipuc run` as a user types it: the README's FP8 example validates against
//! the device-numerics reference and passes; `--reference-fp32` adds the FP32
//! comparison; `--reference-inferences N` runs N resident inferences, each
//! validated; out-of-range values are rejected before any work.

mod common;
use common::{ipuc, rejection_command};

#[test]
fn readme_fp8_example_passes_with_fp32_figures_for_every_inference() {
    let summary_path =
        std::env::temp_dir().join(format!("ipuc-cli-fp8-summary-{}.json", std::process::id()));
    let plan_path =
        std::env::temp_dir().join(format!("ipuc-cli-fp8-plan-{}.txt", std::process::id()));
    let out = ipuc(&[
        "run",
        "-v",
        "--summary-json",
        summary_path.to_str().unwrap(),
        "--plan-output",
        plan_path.to_str().unwrap(),
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
    // Issue #13 item 8: every report says what is simulated and what is
    // modelled — the CLI and the run summary alike; and rule 6 is enforced.
    assert!(
        stdout.contains("cycles: kernel bodies (native codelets): modelled")
            && stdout.contains("cycles: exchange rows: simulated")
            && stdout.contains("hardware rules (enforced by the codelets; facts §2.10 rule 6)"),
        "{stdout}"
    );
    // `--plan-output`: the chosen plan, the Repeat body indented under its
    // op, each GEMM with its grid and weight mode.
    let plan = std::fs::read_to_string(&plan_path).unwrap();
    std::fs::remove_file(&plan_path).unwrap();
    assert!(plan.starts_with("# chosen plan: "), "{plan}");
    assert!(plan.contains("  encoder: repeat body of "), "{plan}");
    assert!(
        plan.lines()
            .any(|l| l.contains("    encoder.layers.*.mlp.fc1: gemm ") && l.contains(" grid ")),
        "{plan}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary_path).unwrap()).unwrap();
    std::fs::remove_file(&summary_path).unwrap();
    let sources = &summary["cycle_sources"];
    assert!(
        sources["kernel bodies (native codelets)"]
            .as_str()
            .unwrap()
            .starts_with("modelled"),
        "{summary}"
    );
    assert!(
        sources["supervisor code"]
            .as_str()
            .unwrap()
            .starts_with("simulated"),
        "{summary}"
    );
}

/// `--rate-band` (#39): the same package simulated with every kernel rate
/// at the optimistic and the conservative end of its sources; the band
/// brackets the chosen rates' figure, in the report and the summary.
#[test]
fn the_rate_band_brackets_the_chosen_rates() {
    let summary_path =
        std::env::temp_dir().join(format!("ipuc-cli-band-summary-{}.json", std::process::id()));
    let out = ipuc(&[
        "run",
        "--summary-json",
        summary_path.to_str().unwrap(),
        "--workload",
        "siglip-small",
        "--vit-layers",
        "2",
        "--planning-tiles",
        "64",
        "--rate-band",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("simulated band: "), "{stdout}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary_path).unwrap()).unwrap();
    std::fs::remove_file(&summary_path).unwrap();
    let chosen = summary["cropped_cycles"].as_u64().unwrap();
    let end = |e: &str| summary["rate_band"][e]["cropped_cycles"].as_u64().unwrap();
    assert!(
        end("optimistic") < chosen && chosen <= end("conservative"),
        "{summary}"
    );
    // The layer breakdown sets each class beside its floor on the chip.
    let floors = &summary["layer_breakdown"]["floors"];
    assert!(floors["gemm"].as_u64().unwrap() > 0, "{summary}");
    assert!(floors["exchange"].as_u64().unwrap() > 0, "{summary}");
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
    assert!(stderr.contains("0 is not in 1..=10000"), "{stderr}");
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
    let out = ipuc(&rejection_command(
        "run",
        "planner",
        &[
            "--reference-run",
            "--memory-profile-directory",
            dir.to_str().unwrap(),
            "--summary-json",
            path.to_str().unwrap(),
        ],
    ));
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

/// Snapshot of the memory-rejection message as `ipuc compile` prints it:
/// the failing op by its model name, the top dozen allocations (not all
/// 450), then the reported candidate's report path and the others beside
/// it; the reports exist where it says, named by op and candidate. (The
/// directory is replaced by `DIR`.)
#[test]
fn memory_rejection_message_snapshot() {
    let dir = std::env::temp_dir().join(format!("ipuc-cli-rejection-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = ipuc(&rejection_command(
        "compile",
        "planner",
        &["--memory-profile-directory", dir.to_str().unwrap()],
    ));
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error = &stderr[stderr.find("error: ").expect("an error line")..];
    assert!(
        std::fs::metadata(dir.join("rejected-op0-0000.html")).is_ok(),
        "the named report exists"
    );
    let normalised = error.replace(dir.to_str().unwrap(), "DIR");
    let expected = "\
error: planning: per-tile memory exceeded in top level, during embeddings.patchify (op 0: im2col_patches patch gather into 4 row blocks): tile 3 needs 607332 bytes (605572 planned + 1760 support reserve) of 586960
  interleaved 0 of 424880 bytes; 16 tiles over budget at this moment
      10592 B  Parameter Standard  vision_model.embeddings.patch_embedding.weight
       7776 B  Parameter Standard  vision_model.head.attention.in_proj_weight
       5184 B  Parameter Standard  vision_model.encoder.layers.0.mlp.fc1.weight
       5184 B  Parameter Standard  vision_model.encoder.layers.0.mlp.fc2.weight
       5184 B  Parameter Standard  vision_model.encoder.layers.1.mlp.fc1.weight
       5184 B  Parameter Standard  vision_model.encoder.layers.1.mlp.fc2.weight
       5184 B  Parameter Standard  vision_model.encoder.layers.10.mlp.fc1.weight
       5184 B  Parameter Standard  vision_model.encoder.layers.10.mlp.fc2.weight
       5184 B  Parameter Standard  vision_model.encoder.layers.11.mlp.fc1.weight
       5184 B  Parameter Standard  vision_model.encoder.layers.11.mlp.fc2.weight
       5184 B  Parameter Standard  vision_model.encoder.layers.12.mlp.fc1.weight
       5184 B  Parameter Standard  vision_model.encoder.layers.12.mlp.fc2.weight
  … 439 more allocations (535364 B) in the report
  report: DIR/rejected-op0-0000.html (+ .json: tile picker, live bytes against the budget, allocations at the peak)
  and 2 more rejected candidate(s) beside it, lowest peak first (…-0001.html to …-0002.html)
";
    assert_eq!(normalised, expected);
    std::fs::remove_dir_all(&dir).ok();
}

/// A batch that does not fit: its own rejection's reports are written
/// (into `--memory-profile-directory`), and the search for the largest
/// batch that fits (3 here) writes none, neither there nor
/// in the working directory, so the reports are the named batch's alone.
#[test]
fn batch_search_writes_only_the_named_batchs_reports() {
    let base = std::env::temp_dir().join(format!("ipuc-cli-batch-search-{}", std::process::id()));
    let (dir, cwd) = (base.join("reports"), base.join("cwd"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ipuc"))
        .args([
            "compile",
            "--vit-small",
            "--vit-layers",
            "1",
            "--vit-batch",
            "6",
            "--planner-data-budget",
            "14600",
            "--memory-profile-directory",
            dir.to_str().unwrap(),
        ])
        .current_dir(&cwd)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("--vit-batch 6 does not fit; the largest batch that fits is 3"),
        "{stderr}"
    );
    let names = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        names(&cwd),
        Vec::<String>::new(),
        "nothing in the working directory"
    );
    let reports = names(&dir);
    assert!(!reports.is_empty());
    let op = reports[0].split('-').nth(1).unwrap().to_string();
    assert!(
        reports
            .iter()
            .all(|n| n.split('-').nth(1) == Some(op.as_str())),
        "one op's reports only: {reports:?}"
    );
    assert!(
        stderr.contains(&format!("rejected-{op}-0000.html")),
        "{stderr}"
    );
    std::fs::remove_dir_all(&base).ok();
}

/// Issue #13 item 6 at the command line: `ipuc exec` of a package written
/// by `ipuc run --package` reports the same simulated cycles and the same
/// validation as the run that wrote it, and (issue #43 item 3) both write
/// the device's `last_hidden_state` with `--output-hidden-state`, the same
/// bytes, beside the pooled embedding.
#[test]
fn exec_of_a_written_package_matches_the_run() {
    let dir = std::env::temp_dir().join(format!("ipuc-cli-exec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let package = dir.join("small.ipuc");
    let common = [
        "--workload",
        "siglip-small",
        "--vit-layers",
        "1",
        "--reference-run",
    ];
    let (run_hidden, exec_hidden) = (dir.join("run-hidden.npy"), dir.join("exec-hidden.npy"));
    let embedding = dir.join("embedding.npy");
    let mut run_args = vec!["run", "--planning-tiles", "64", "--package"];
    run_args.push(package.to_str().unwrap());
    run_args.extend(common);
    run_args.extend([
        "--output-hidden-state",
        run_hidden.to_str().unwrap(),
        "--output-embedding",
        embedding.to_str().unwrap(),
    ]);
    let run = ipuc(&run_args);
    let mut exec_args = vec!["exec", package.to_str().unwrap()];
    exec_args.extend(common);
    exec_args.extend(["--output-hidden-state", exec_hidden.to_str().unwrap()]);
    let exec = ipuc(&exec_args);
    let read = |p: &std::path::Path| ipuc::input::NpyArray::read(p).ok();
    let (hidden, again, pooled) = (read(&run_hidden), read(&exec_hidden), read(&embedding));
    std::fs::remove_dir_all(&dir).unwrap();
    let stdout = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();
    let (r, e) = (stdout(&run), stdout(&exec));
    assert!(
        run.status.success() && exec.status.success(),
        "{r}\n{e}\n{}",
        String::from_utf8_lossy(&exec.stderr)
    );
    let cycles = |s: &str| {
        s.lines()
            .find(|l| l.starts_with("inference[0]: "))
            .and_then(|l| l.split(" simulated cycles").next())
            .map(str::to_owned)
    };
    assert!(cycles(&r).is_some(), "{r}");
    assert_eq!(cycles(&r), cycles(&e), "run:\n{r}\nexec:\n{e}");
    assert!(e.contains("validation[0]: PASS"), "{e}");
    assert!(
        r.contains("hidden state: wrote last_hidden_state [1, 4, 144]"),
        "{r}"
    );
    let hidden = hidden.expect("run wrote --output-hidden-state");
    assert_eq!(hidden.shape, [1, 4, 144]);
    assert!(hidden.data.iter().all(|v| v.is_finite()));
    assert_eq!(
        Some(&hidden),
        again.as_ref(),
        "exec writes the run's hidden state"
    );
    assert_eq!(
        pooled.expect("run wrote --output-embedding").shape,
        [1, 144]
    );
}
