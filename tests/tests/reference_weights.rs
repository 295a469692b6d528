//! Checkpoint loader errors: each names the file and the tensor involved.

use std::path::{Path, PathBuf};

use ipuc::model::{build_siglip, ModelOptions, SiglipModel, VisionConfig};
use ipuc::weights::{weights_for, WeightError, WeightSource};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/siglip/full-f32")
}

fn model() -> SiglipModel {
    let text = std::fs::read_to_string(fixture_dir().join("config.json")).unwrap();
    build_siglip(
        &VisionConfig::from_json(&text).unwrap(),
        &ModelOptions::default(),
    )
    .unwrap()
}

/// The fixture's tensors as (name, dtype, shape, bytes).
fn tensors() -> Vec<(String, Dtype, Vec<usize>, Vec<u8>)> {
    let bytes = std::fs::read(fixture_dir().join("model.safetensors")).unwrap();
    let st = SafeTensors::deserialize(&bytes).unwrap();
    let mut v: Vec<_> = st
        .tensors()
        .into_iter()
        .map(|(n, t)| (n, t.dtype(), t.shape().to_vec(), t.data().to_vec()))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// Write a modified checkpoint to its own temp directory.
fn write(tag: &str, list: &[(String, Dtype, Vec<usize>, Vec<u8>)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ipuc-weights-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let views: Vec<(String, TensorView<'_>)> = list
        .iter()
        .map(|(n, d, s, b)| (n.clone(), TensorView::new(*d, s.clone(), b).unwrap()))
        .collect();
    let bytes = safetensors::serialize(views, None).unwrap();
    std::fs::write(dir.join("model.safetensors"), bytes).unwrap();
    dir
}

fn load_err(dir: PathBuf) -> (WeightError, String) {
    let e = weights_for(&model(), &WeightSource::Checkpoint(dir)).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("model.safetensors"),
        "error does not name the file: {msg}"
    );
    (e, msg)
}

#[test]
fn fixture_loads_and_text_tower_is_ignored() {
    let w = weights_for(&model(), &WeightSource::Checkpoint(fixture_dir())).unwrap();
    assert!(tensors().iter().any(|t| t.0.starts_with("text_model.")));
    assert_eq!(w.len(), model().parameters.len());
}

#[test]
fn missing_tensor_is_named() {
    let mut list = tensors();
    list.retain(|t| t.0 != "vision_model.encoder.layers.1.mlp.fc2.bias");
    let (e, msg) = load_err(write("missing", &list));
    assert!(matches!(e, WeightError::Missing { .. }), "{msg}");
    assert!(
        msg.contains("encoder.layers.1.mlp.fc2.bias") && msg.contains("[32]"),
        "{msg}"
    );
}

#[test]
fn wrong_shape_is_named_with_both_shapes() {
    let mut list = tensors();
    let t = list
        .iter_mut()
        .find(|t| t.0 == "vision_model.post_layernorm.weight")
        .unwrap();
    t.2 = vec![16];
    t.3.truncate(16 * 4);
    let (e, msg) = load_err(write("shape", &list));
    assert!(matches!(e, WeightError::Shape { .. }), "{msg}");
    assert!(
        msg.contains("vision_model.post_layernorm.weight")
            && msg.contains("[16]")
            && msg.contains("[32]"),
        "{msg}"
    );
}

#[test]
fn bad_dtype_is_named() {
    let mut list = tensors();
    let t = list
        .iter_mut()
        .find(|t| t.0 == "vision_model.head.probe")
        .unwrap();
    t.1 = Dtype::I32;
    let (e, msg) = load_err(write("dtype", &list));
    assert!(matches!(e, WeightError::Dtype { .. }), "{msg}");
    assert!(
        msg.contains("vision_model.head.probe") && msg.contains("I32"),
        "{msg}"
    );
}

#[test]
fn truncated_file_names_the_first_incomplete_tensor() {
    let dir = write("trunc", &tensors());
    let file = dir.join("model.safetensors");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 100]).unwrap();
    let (e, msg) = load_err(dir);
    let WeightError::Truncated { tensor, .. } = &e else {
        panic!("expected Truncated, got {msg}");
    };
    // serialize() lays tensors out by dtype alignment then name; the last
    // one is the one cut.
    assert!(msg.contains(tensor.as_str()) && !tensor.is_empty(), "{msg}");
    assert!(msg.contains("truncated"), "{msg}");
}

#[test]
fn corrupt_header_and_unexpected_or_non_finite_tensors() {
    let dir = write("corrupt", &tensors());
    std::fs::write(
        dir.join("model.safetensors"),
        b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}",
    )
    .unwrap();
    let (e, msg) = load_err(dir);
    assert!(matches!(e, WeightError::Corrupt { .. }), "{msg}");

    let mut list = tensors();
    list.push((
        "vision_model.encoder.layers.0.mlp.fc3.weight".into(),
        Dtype::F32,
        vec![2],
        vec![0; 8],
    ));
    let (e, msg) = load_err(write("unexpected", &list));
    assert!(matches!(e, WeightError::Unexpected { .. }), "{msg}");
    assert!(
        msg.contains("vision_model.encoder.layers.0.mlp.fc3.weight"),
        "{msg}"
    );
    // The family's own config classes, not another family's.
    assert!(
        msg.ends_with("(not a parameter of this SiglipVisionConfig or SiglipConfig configuration)"),
        "{msg}"
    );

    let mut list = tensors();
    let t = list
        .iter_mut()
        .find(|t| t.0 == "vision_model.embeddings.patch_embedding.bias")
        .unwrap();
    t.3[8..12].copy_from_slice(&f32::NAN.to_le_bytes());
    let (e, msg) = load_err(write("nan", &list));
    assert!(
        matches!(e, WeightError::NonFinite { index: 2, .. }),
        "{msg}"
    );
    assert!(msg.contains("patch_embedding.bias"), "{msg}");

    let e = weights_for(
        &model(),
        &WeightSource::Checkpoint("/nonexistent/ckpt".into()),
    )
    .unwrap_err();
    assert!(e.to_string().contains("/nonexistent/ckpt"), "{e}");
}
