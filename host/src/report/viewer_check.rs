//! The pages' scripts run headless (`host/tests/viewer/harness.js` under
//! node, with a stand-in DOM): clicking an operation zooms to it, the search
//! highlights every match and Enter zooms to the first, the op lane answers
//! hover and click, a summarized iteration shows its own split; a rejection
//! report's picked tile drives the bar, the class table and the live list;
//! the memory map's address zoom stretches the all-tile map. Skipped, and
//! said so, where node is not installed.

use std::path::Path;
use std::process::Command;

use super::tests::{synthetic_memory_map, synthetic_profile, synthetic_rejection};
use super::*;

/// The harness's JSON for `page` in `scenario`, or `None` without node.
fn run_harness(page: &Path, scenario: &str) -> Option<serde_json::Value> {
    let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/viewer/harness.js");
    let out = match Command::new("node")
        .arg(&harness)
        .arg(page)
        .arg(scenario)
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("viewer check skipped: node is not installed");
            return None;
        }
        Err(e) => panic!("running node: {e}"),
    };
    assert!(
        out.status.success(),
        "{scenario} harness failed on {}:\n{}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("harness prints JSON"))
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("ipuc-viewer-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn pair(v: &serde_json::Value) -> (f64, f64) {
    (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
}

#[test]
fn profile_page_zooms_searches_and_keeps_iterations_apart() {
    let dir = scratch("profile");
    let profile = synthetic_profile(16, 6).with_iteration_summaries().unwrap();
    let page = dir.join("model.html");
    std::fs::write(&page, profile_html::render(&profile).unwrap()).unwrap();
    let Some(r) = run_harness(&page, "profile") else {
        return;
    };
    assert_eq!(r["rendered"], "profile");
    assert_eq!(r["summarized"], true);
    let span = pair(&r["span"]);
    assert_eq!(pair(&r["initial_view"]), span);
    // The first table row: highlighted alone, and the view is its extent
    // (or, for a summed step, its iteration) with a 5 % margin.
    assert_eq!(r["row_highlighted"], 1);
    let (a, b) = pair(&r["row_view"]);
    assert!(b - a < span.1 - span.0, "zoomed in: {r}");
    if let (Some(x0), Some(x1)) = (r["row_extent"][0].as_f64(), r["row_extent"][1].as_f64()) {
        assert!(
            a <= x0 && x1 <= b && (b - a) <= (x1 - x0) * 1.2 + 10.0,
            "{r}"
        );
    }
    assert!(r["row_hash"].as_str().unwrap().contains("&op="));
    // Search: every op with "mlp" highlighted; Enter zooms to its first run.
    assert_eq!(r["search_highlighted"], r["search_expected"]);
    assert!(r["search_expected"].as_u64().unwrap() > 0);
    assert!(r["search_info"].as_str().unwrap().contains(" match"), "{r}");
    let (s0, s1) = pair(&r["search_view"]);
    let (f0, f1) = pair(&r["search_first_run"]);
    assert!(
        s0 <= f0 && f1 <= s1 && (s1 - s0) < (f1 - f0) * 1.2 + 10.0,
        "{r}"
    );
    assert!(r["search_info_after"]
        .as_str()
        .unwrap()
        .starts_with("match 1 of "));
    // The op lane answers hover and click at the middle of the span.
    assert!(!r["lane_tip"].as_str().unwrap().is_empty(), "{r}");
    let (l0, l1) = pair(&r["lane_view"]);
    assert!(l1 - l0 < span.1 - span.0, "lane click zooms: {r}");
    // The last iteration is summarized and its split is shown.
    let tip = r["iteration_tip"].as_str().unwrap();
    assert!(tip.contains("Repeat iteration 5 (summarized)"), "{tip}");
    for kind in ["compute", "exchange", "sync", "patch"] {
        assert!(tip.contains(kind), "{tip}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rejection_panels_follow_the_picked_tile() {
    let dir = scratch("rejection");
    let map = synthetic_memory_map(6);
    let mut r = synthetic_rejection(&map);
    r.tiles = map.tiles.clone();
    let page = dir.join("rejected-op4-0000.html");
    write_rejection(&page, &r).unwrap();
    let Some(out) = run_harness(&page, "rejection") else {
        return;
    };
    assert_eq!(out["rendered"], "rejection");
    assert_eq!(out["options"].as_array().unwrap().len(), 6);
    let picked = out["picked_tile"].as_u64().unwrap();
    assert_ne!(picked, u64::from(r.peak_tile));
    let title = out["picked_bar_title"].as_str().unwrap();
    assert!(title.starts_with(&format!("Tile {picked} ")), "{title}");
    assert_ne!(out["picked_bar_title"], out["initial_bar_title"]);
    assert_ne!(out["picked_classes"], out["initial_classes"]);
    assert!(out["picked_class_title"]
        .as_str()
        .unwrap()
        .contains(&format!("tile {picked}")));
    assert!(out["picked_live_title"]
        .as_str()
        .unwrap()
        .starts_with(&format!("Tile {picked} ")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn memory_map_zooms_its_addresses() {
    let dir = scratch("memory");
    let page = dir.join("memory.html");
    write_memory_map(&page, &synthetic_memory_map(1472)).unwrap();
    let Some(out) = run_harness(&page, "memory") else {
        return;
    };
    assert_eq!(out["rendered"], "memory");
    let (band0, band1) = (
        out["initial_band"].as_u64().unwrap(),
        out["zoomed_band"].as_u64().unwrap(),
    );
    assert!(band1 >= band0 * 8, "×32 zoom stretches the band: {out}");
    assert!(out["zoomed_height"].as_u64().unwrap() <= 30_000, "{out}");
    // 624 KiB over hundreds of pixels, not ~50.
    assert!(out["bytes_per_px"].as_u64().unwrap() < 2_000, "{out}");
    assert!(out["hash"].as_str().unwrap().contains("zoom=32"));
    let _ = std::fs::remove_dir_all(&dir);
}
