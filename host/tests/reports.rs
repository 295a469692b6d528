//! The files a real run writes, checked as a reader would: every JSON
//! report against its schema (`host/schemas/*.schema.json`), `memory.png` a
//! valid PNG of the documented size, `index.html` linking every artifact,
//! and memory-rejection reports for planner and placement rejections alike.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

mod common;
use common::{ipuc, rejection_command};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ipuc-reports-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn schema(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(format!("{name}.schema.json"));
    let text = std::fs::read_to_string(&path).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `doc` satisfies schema `name` (every violation listed otherwise).
fn assert_valid(name: &str, doc: &Value, what: &Path) {
    let v = schema(name);
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .take(10)
        .collect();
    assert!(
        errors.is_empty(),
        "{} does not match {name}.schema.json:\n{}",
        what.display(),
        errors.join("\n")
    );
}

/// `ipuc compile` of forced-rejection case `case` with its reports in a
/// scratch directory: the directory and the (failed) output.
fn compile_rejected(case: &str) -> (PathBuf, Output) {
    let dir = scratch(case);
    let out = ipuc(&rejection_command(
        "compile",
        case,
        &["--memory-profile-directory", dir.to_str().unwrap()],
    ));
    assert_eq!(out.status.code(), Some(3), "case {case} is rejected");
    (dir, out)
}

fn rejection_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("rejected-op"))
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_file_of_a_run_matches_its_schema_and_the_index_links_them_all() {
    let dir = scratch("run");
    let s = |p: PathBuf| p.display().to_string();
    let out = ipuc(&[
        "run",
        "--workload",
        "siglip-small",
        "--vit-layers",
        "1",
        "--planning-tiles",
        "16",
        "--reference-run",
        "--package",
        &s(dir.join("model.ipuc")),
        "--profile-output",
        &s(dir.join("model.ipuprof")),
        "--memory-profile-directory",
        &s(dir.join("memory")),
        "--summary-json",
        &s(dir.join("summary.json")),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The report names where each file went.
    let stdout = String::from_utf8_lossy(&out.stdout);
    for (what, file) in [
        ("memory map: ", dir.join("memory").join("memory.html")),
        ("package: ", dir.join("model.ipuc")),
        ("index: ", dir.join("model.index.html")),
    ] {
        assert!(
            stdout.contains(&format!("{what}{}", file.display())),
            "{what}: {stdout}"
        );
    }

    let profile = json(&dir.join("model.ipuprof"));
    assert_valid("profile", &profile, &dir.join("model.ipuprof"));
    assert!(!profile["tiles"].as_array().unwrap().is_empty());
    assert_valid(
        "operations",
        &json(&dir.join("model.operations.json")),
        &dir.join("model.operations.json"),
    );
    // The Perfetto trace: gzipped Trace Event Format JSON, its schema in
    // otherData, one complete event per profile sample.
    let gz = std::fs::read(dir.join("model.trace.json.gz")).unwrap();
    assert_eq!(&gz[..2], b"\x1f\x8b", "a gzip stream");
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut text).unwrap();
    assert!(
        gz.len() * 5 < text.len(),
        "gzip should shrink the trace at least 5-fold: {} -> {}",
        text.len(),
        gz.len()
    );
    let trace: Value = serde_json::from_slice(&text).unwrap();
    assert_eq!(trace["otherData"]["schema"], "ipuc.trace");
    let samples: usize = profile["tiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["samples"].as_array().unwrap().len())
        .sum();
    let tile_events = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == 1)
        .count();
    assert_eq!(tile_events, samples);
    let memory = json(&dir.join("memory/memory.json"));
    assert_valid("memory", &memory, &dir.join("memory/memory.json"));
    let (used, unused) = (
        memory["tiles"].as_array().unwrap().len(),
        memory["unused_tiles"].as_array().unwrap().len(),
    );
    assert_eq!((used, used + unused), (16, 1472));
    let summary = json(&dir.join("summary.json"));
    assert_valid("summary", &summary, &dir.join("summary.json"));
    assert_eq!(summary["result"], "PASS");

    // memory.png: a PNG of the size `memory_png::size` documents for this map.
    let png_bytes = std::fs::read(dir.join("memory/memory.png")).unwrap();
    assert_eq!(&png_bytes[..8], b"\x89PNG\r\n\x1a\n");
    let png = image::load_from_memory_with_format(&png_bytes, image::ImageFormat::Png).unwrap();
    let map: ipuc::report::MemoryMap =
        serde_json::from_slice(&std::fs::read(dir.join("memory/memory.json")).unwrap()).unwrap();
    let (w, h) = ipuc::report::memory_png::size(&map);
    assert_eq!((png.width(), png.height()), (w, h));

    // index.html links every artifact the run wrote, and each link resolves.
    let index = std::fs::read_to_string(dir.join("model.index.html")).unwrap();
    // (minijinja escapes `/` in attributes as `&#x2f;`, which a browser decodes.)
    let index = index.replace("&#x2f;", "/");
    let hrefs: Vec<&str> = index
        .split("href=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    for file in [
        "model.ipuprof",
        "model.html",
        "model.trace.json.gz",
        "model.operations.json",
        "memory/memory.html",
        "memory/memory.json",
        "memory/memory.png",
        "summary.json",
        "model.ipuc",
        "model.patch-audit.txt",
        "model.phase-patch-audit.txt",
    ] {
        assert!(
            hrefs.contains(&file),
            "index.html does not link {file}: {hrefs:?}"
        );
    }
    for h in &hrefs {
        assert!(
            dir.join(h).exists(),
            "index.html links {h}, which does not exist"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_schemas_reject_what_they_describe_as_wrong() {
    let ok = serde_json::json!({
        "schema": "ipuc.memory-map",
        "schema_version": 1,
        "title": "t",
        "budget": { "tile_bytes": 586960, "support_reserve": 0, "memory_base": 311296, "memory_end": 950272 },
        "moments": ["step 0"],
        "tiles": [{ "tile": 3, "allocations": [
            { "name": "w", "class": "weight", "address": 311296, "size": 64, "live": { "first": 0, "last": 0 } }
        ] }],
        "unused_tiles": [0, 1, 2]
    });
    assert_valid("memory", &ok, Path::new("a hand-made map"));
    let memory = schema("memory");
    let mut missing = ok.clone();
    missing.as_object_mut().unwrap().remove("unused_tiles");
    assert!(!memory.is_valid(&missing), "unused_tiles is required");
    let mut class = ok.clone();
    class["tiles"][0]["allocations"][0]["class"] = "furniture".into();
    assert!(!memory.is_valid(&class), "an unknown class");
    let mut version = ok.clone();
    version["schema_version"] = 2.into();
    assert!(!memory.is_valid(&version), "another schema version");
    let mut tile = ok;
    tile["tiles"][0]["tile"] = 1472.into();
    assert!(!memory.is_valid(&tile), "tile ids stop at 1471");
}

/// A planner rejection writes one report per rejected candidate, each
/// JSON matching the schema and naming the planner as its source. The
/// picker holds only tiles of the plan (`--planning-tiles 16`: 0–15) that
/// hold something, and says truly how many of the over-budget tiles it
/// holds. A rerun replaces the reports and removes an earlier run's extra
/// candidates of the same op (files of another op stay).
#[test]
fn planner_rejection_reports_match_the_schema() {
    let dir = scratch("planner");
    for stale in [
        "rejected-op0-0003.html",
        "rejected-op0-0003.json",
        "rejected-op0-0011.json",
    ] {
        std::fs::write(dir.join(stale), "an earlier run's").unwrap();
    }
    std::fs::write(dir.join("rejected-op7-0000.html"), "another op's").unwrap();
    let out = ipuc(&rejection_command(
        "compile",
        "planner",
        &["--memory-profile-directory", dir.to_str().unwrap()],
    ));
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("removed 3 file(s) of an earlier run's rejection reports of op 0"),
        "{stderr}"
    );
    assert!(dir.join("rejected-op7-0000.html").exists());
    std::fs::remove_file(dir.join("rejected-op7-0000.html")).unwrap();
    let files = rejection_files(&dir);
    let jsons: Vec<&PathBuf> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(jsons.len(), 3, "{files:?}");
    for j in jsons {
        let doc = json(j);
        assert_valid("rejection", &doc, j);
        assert_eq!(doc["source"], "planner estimate");
        let tiles = doc["tiles"].as_array().unwrap();
        for t in tiles {
            assert!(t["tile"].as_u64().unwrap() < 16, "outside the plan: {t}");
            assert!(!t["allocations"].as_array().unwrap().is_empty());
        }
        let over = doc["tiles_over_budget"].as_u64().unwrap();
        let html = std::fs::read_to_string(j.with_extension("html")).unwrap();
        let note = if over as usize <= tiles.len() {
            format!("the {} most loaded tiles of this candidate", tiles.len())
        } else {
            format!("of the {over} tiles over budget")
        };
        assert!(html.contains(&note), "`{note}` missing");
        assert!(html.contains("id=\"rbartitle\"") && html.contains("id=\"rclasses\""));
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Placement (not the planner) rejects when the planner is given more room
/// than a tile has (`--planner-data-budget`, a testing flag; 650,000 bytes
/// leaves one buffer without a free range on tile 3): the message
/// names the tile, its charge against the budget and the largest buffers,
/// then the report; the report is interactive (tile picker over the refused
/// and most loaded tiles, each with its live bytes over every schedule step)
/// and its JSON matches the schema; the run summary says `placement`.
#[test]
fn placement_rejection_writes_an_interactive_report() {
    let dir = scratch("placement");
    let summary_path = dir.join("summary.json");
    let profile = dir.join("profile");
    let out = ipuc(&rejection_command(
        "run",
        "placement",
        &[
            "--reference-run",
            "--memory-profile-directory",
            dir.to_str().unwrap(),
            "--summary-json",
            summary_path.to_str().unwrap(),
            "--profile-output",
            profile.to_str().unwrap(),
        ],
    ));
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for needle in [
        "error: SRAM placement: ",
        "tile(s) do not fit although the planner's estimate accepted the plan",
        "but the largest free range is",
        "'s peak: ",
        "vision_model.encoder.layers.0.mlp.fc1.weight ×23",
        "  report: ",
    ] {
        assert!(stderr.contains(needle), "missing `{needle}` in:\n{stderr}");
    }
    assert_eq!(
        stderr.matches("largest free range").count(),
        1,
        "the cause is printed once:\n{stderr}"
    );
    let files = rejection_files(&dir);
    assert_eq!(files.len(), 2, "one report (.html + .json): {files:?}");
    let report = files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    assert!(stderr.contains(&report.with_extension("html").display().to_string()));
    let doc = json(report);
    assert_valid("rejection", &doc, report);
    assert_eq!(doc["source"], "placement");
    let live: u64 = doc["live"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["bytes"].as_u64().unwrap())
        .sum();
    assert!(live > 586_960, "the reported tile is over budget: {live}");
    assert!(
        doc["moments"].as_array().unwrap().len() > 100,
        "every schedule step"
    );
    let tiles = doc["tiles"].as_array().unwrap();
    assert_eq!(tiles.len(), 16, "the refused tiles, then the others");
    assert_eq!(tiles[0]["tile"], doc["peak_tile"]);
    // Every refused tile is in the picker, and the page says so truly.
    let refused = doc["refused_tiles"].as_array().unwrap();
    assert_eq!(
        refused.len() as u64,
        doc["tiles_over_budget"].as_u64().unwrap()
    );
    for r in refused {
        assert!(
            tiles.iter().any(|t| t["tile"] == *r),
            "refused tile {r} not in the picker"
        );
    }

    let html = std::fs::read_to_string(report.with_extension("html")).unwrap();
    for needle in [
        "id=\"rtile\"",
        "id=\"timeline\"",
        "id=\"rlive\"",
        "rejected by <b>placement</b>",
        "(physical ",
        &format!(
            "the picker holds all {} tiles placement refused",
            refused.len()
        ),
    ] {
        assert!(html.contains(needle), "missing `{needle}`");
    }
    // A rejected run's index links its report and summary.
    let index = std::fs::read_to_string(dir.join("profile/index.html")).unwrap();
    for f in [
        report.with_extension("html"),
        report.clone(),
        summary_path.clone(),
    ] {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(index.contains(&name), "index.html does not link {name}");
    }
    let summary = json(&summary_path);
    assert_valid("summary", &summary, &summary_path);
    assert_eq!(summary["result"], "rejected");
    assert_eq!(summary["rejection"]["stage"], "placement");
    assert_eq!(summary["rejection"]["tile"], doc["peak_tile"]);
    std::fs::remove_dir_all(&dir).ok();
}

/// A late placement failure (the `patch-data` case of
/// `fixtures/rejections.txt`): the buffers are placed, then a tile's patch
/// data finds no room. It gets the same report as placement's (HTML + JSON
/// matching the schema) with the shortfall: tile, bytes needed, bytes
/// free, what the tile holds; stderr names the report.
#[test]
fn a_late_patch_data_failure_writes_a_rejection_report() {
    let (dir, out) = compile_rejected("patch-data");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for needle in [
        "error: placing patch data: logical tile ",
        "bytes of patch data (",
        "bytes needed, ",
        "patch data: Repeat tables",
        "  report: ",
    ] {
        assert!(stderr.contains(needle), "missing `{needle}` in:\n{stderr}");
    }
    let files = rejection_files(&dir);
    assert_eq!(files.len(), 2, "one report (.html + .json): {files:?}");
    let report = files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    assert!(stderr.contains(&report.with_extension("html").display().to_string()));
    let doc = json(report);
    assert_valid("rejection", &doc, report);
    let short = &doc["shortfall"];
    assert_eq!(short["tile"], doc["peak_tile"]);
    assert!(
        short["needed_bytes"].as_u64().unwrap() > short["free_bytes"].as_u64().unwrap(),
        "{short}"
    );
    assert_eq!(doc["tiles"][0]["tile"], doc["peak_tile"]);
    let html = std::fs::read_to_string(report.with_extension("html")).unwrap();
    assert!(html.contains("Did not fit: the patch data"));
    std::fs::remove_dir_all(&dir).ok();
}
