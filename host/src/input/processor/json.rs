//! `preprocessor_config.json` as transformers reads it: the processor
//! class (`image_processor_type`, or the legacy `feature_extractor_type`),
//! then each key over the class's defaults. Every key ipuc reads changes
//! the pixels as transformers would; keys that only name things are
//! accepted; anything else, or a value ipuc does not implement, is a
//! [`ProcessorError::Unsupported`] naming the key and the file.

use std::path::Path;

use serde_json::{Map, Value};

use super::{ImageProcessor, ProcessorClass, Resample, Resize};

/// The file name inside a checkpoint directory.
pub const PREPROCESSOR_FILE: &str = "preprocessor_config.json";

/// Why a `preprocessor_config.json` cannot be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ProcessorError {
    /// The file could not be read.
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// Not a JSON object.
    #[error("{path}: not a valid preprocessor config: {message}")]
    Json { path: String, message: String },
    /// A key whose value ipuc does not implement (or cannot read).
    #[error("{path}: `{key}`: {reason}")]
    Unsupported {
        path: String,
        key: String,
        reason: String,
    },
}

impl ProcessorError {
    pub(super) fn io(path: &Path, e: std::io::Error) -> ProcessorError {
        ProcessorError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        }
    }
}

/// Keys that name or route things and do not change the pixels.
const NAMING_KEYS: [&str; 6] = [
    "image_processor_type",
    "feature_extractor_type",
    "processor_class",
    "_processor_class",
    "disable_grouping",
    "image_seq_length",
];

/// transformers' image-processor options (`ImagesKwargs`) ipuc reads.
const READ_KEYS: [&str; 12] = [
    "do_resize",
    "size",
    "default_to_square",
    "resample",
    "do_center_crop",
    "crop_size",
    "do_rescale",
    "rescale_factor",
    "do_normalize",
    "image_mean",
    "image_std",
    "do_convert_rgb",
];

/// The other `ImagesKwargs`: accepted only with the value that changes
/// nothing.
const INERT_VALUES: [(&str, &[&str]); 6] = [
    ("do_pad", &["false", "null"]),
    ("pad_size", &["null"]),
    ("data_format", &["\"channels_first\"", "null"]),
    ("input_data_format", &["null"]),
    ("return_tensors", &["null"]),
    ("device", &["null"]),
];

/// The published processors of the presets' checkpoints (file name, text).
pub(super) const SO400M: (&str, &str) = (
    "google/siglip-so400m-patch14-384/preprocessor_config.json",
    r#"{"do_normalize": true, "do_rescale": true, "do_resize": true,
        "image_mean": [0.5, 0.5, 0.5], "image_processor_type": "SiglipImageProcessor",
        "image_std": [0.5, 0.5, 0.5], "processor_class": "SiglipProcessor", "resample": 3,
        "rescale_factor": 0.00392156862745098, "size": {"height": 384, "width": 384}}"#,
);
pub(super) const CLIP_L14_336: (&str, &str) = (
    "openai/clip-vit-large-patch14-336/preprocessor_config.json",
    r#"{"crop_size": 336, "do_center_crop": true, "do_normalize": true, "do_resize": true,
        "feature_extractor_type": "CLIPFeatureExtractor",
        "image_mean": [0.48145466, 0.4578275, 0.40821073],
        "image_std": [0.26862954, 0.26130258, 0.27577711], "resample": 3, "size": 336}"#,
);
pub(super) const VIT_B16_224: (&str, &str) = (
    "google/vit-base-patch16-224-in21k/preprocessor_config.json",
    r#"{"do_normalize": true, "do_resize": true, "feature_extractor_type": "ViTFeatureExtractor",
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "resample": 2,
        "size": 224}"#,
);
pub(super) const DINOV2_LARGE: (&str, &str) = (
    "facebook/dinov2-large/preprocessor_config.json",
    r#"{"crop_size": {"height": 224, "width": 224}, "do_center_crop": true,
        "do_convert_rgb": true, "do_normalize": true, "do_rescale": true, "do_resize": true,
        "image_mean": [0.485, 0.456, 0.406], "image_processor_type": "BitImageProcessor",
        "image_std": [0.229, 0.224, 0.225], "resample": 3,
        "rescale_factor": 0.00392156862745098, "size": {"shortest_edge": 256}}"#,
);

/// A reader of one file's keys.
struct Keys<'a> {
    map: &'a Map<String, Value>,
    path: &'a Path,
}

impl Keys<'_> {
    fn fail(&self, key: &str, reason: impl Into<String>) -> ProcessorError {
        ProcessorError::Unsupported {
            path: self.path.display().to_string(),
            key: key.into(),
            reason: reason.into(),
        }
    }

    /// A boolean key (`null` or absent: `default`).
    fn flag(&self, key: &str, default: bool) -> Result<bool, ProcessorError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.fail(key, format!("{v} is not true or false"))),
        }
    }

    fn present(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn side(&self, key: &str, v: &Value) -> Result<usize, ProcessorError> {
        v.as_u64()
            .filter(|&n| n > 0 && n <= 1 << 16)
            .map(|n| n as usize)
            .ok_or_else(|| self.fail(key, format!("{v} is not a size in pixels (1..=65536)")))
    }

    /// `size`/`crop_size` as transformers' `get_size_dict` reads it: an
    /// int is square (`default_to_square`) or the shortest edge.
    fn size(&self, key: &str, square: bool) -> Result<Option<Resize>, ProcessorError> {
        let Some(v) = self.present(key) else {
            return Ok(None);
        };
        if v.is_u64() {
            let n = self.side(key, v)?;
            return Ok(Some(if square {
                Resize::Exact {
                    height: n,
                    width: n,
                }
            } else {
                Resize::ShortestEdge(n)
            }));
        }
        if let Some([h, w]) = v.as_array().map(Vec::as_slice) {
            return Ok(Some(Resize::Exact {
                height: self.side(key, h)?,
                width: self.side(key, w)?,
            }));
        }
        let Some(m) = v.as_object() else {
            return Err(self.fail(key, format!("{v} is not a size")));
        };
        let get = |k: &str| m.get(k).filter(|v| !v.is_null());
        if let Some(extra) = m
            .keys()
            .find(|k| !matches!(k.as_str(), "height" | "width" | "shortest_edge"))
            .filter(|k| get(k).is_some())
        {
            return Err(self.fail(
                key,
                format!("`{extra}` is not implemented (ipuc resizes to height × width or by the shortest edge)"),
            ));
        }
        match (get("height"), get("width"), get("shortest_edge")) {
            (Some(h), Some(w), None) => Ok(Some(Resize::Exact {
                height: self.side(key, h)?,
                width: self.side(key, w)?,
            })),
            (None, None, Some(e)) => Ok(Some(Resize::ShortestEdge(self.side(key, e)?))),
            _ => Err(self.fail(
                key,
                format!("{v}: give `height` and `width`, or `shortest_edge`"),
            )),
        }
    }

    fn triple(&self, key: &str) -> Result<Option<[f32; 3]>, ProcessorError> {
        let Some(v) = self.present(key) else {
            return Ok(None);
        };
        if let Some(x) = v.as_f64() {
            return Ok(Some([x as f32; 3]));
        }
        let values: Option<Vec<f32>> = v
            .as_array()
            .map(|a| a.iter().map(|x| x.as_f64().map(|x| x as f32)).collect())
            .unwrap_or(None);
        match values.as_deref() {
            Some(&[a, b, c]) => Ok(Some([a, b, c])),
            _ => Err(self.fail(key, format!("{v} is not one number per RGB channel"))),
        }
    }

    fn resample(&self, default: Resample) -> Result<Resample, ProcessorError> {
        match self.present("resample") {
            None => Ok(default),
            Some(v) => v.as_u64().and_then(Resample::from_pil).ok_or_else(|| {
                self.fail(
                    "resample",
                    format!("{v} is not a PIL filter number (0..=5)"),
                )
            }),
        }
    }
}

/// The processor class a file names, or `None` when it names none.
fn class_of(keys: &Keys) -> Result<Option<ProcessorClass>, ProcessorError> {
    for key in ["image_processor_type", "feature_extractor_type"] {
        let Some(v) = keys.present(key) else {
            continue;
        };
        let name = v.as_str().unwrap_or_default();
        let base = name
            .strip_suffix("Fast")
            .or_else(|| name.strip_suffix("Pil"))
            .unwrap_or(name);
        let base = base.strip_suffix("FeatureExtractor").map_or(base, |b| b);
        let base = base.strip_suffix("ImageProcessor").unwrap_or(base);
        return match base {
            "Siglip" => Ok(Some(ProcessorClass::Siglip)),
            "CLIP" => Ok(Some(ProcessorClass::Clip)),
            "ViT" => Ok(Some(ProcessorClass::Vit)),
            "Bit" => Ok(Some(ProcessorClass::Bit)),
            _ => Err(keys.fail(
                key,
                format!(
                    "{v} is not an image processor ipuc implements (SiglipImageProcessor, CLIPImageProcessor, ViTImageProcessor, BitImageProcessor)"
                ),
            )),
        };
    }
    Ok(None)
}

/// Rejects transformers options ipuc does not implement; warns of keys
/// that are no option of transformers' PIL processors (transformers keeps
/// them as attributes and never reads them).
fn check_keys(keys: &Keys) -> Result<(), ProcessorError> {
    for (key, value) in keys.map {
        if READ_KEYS.contains(&key.as_str()) || NAMING_KEYS.contains(&key.as_str()) {
            continue;
        }
        let text = value.to_string();
        match INERT_VALUES.iter().find(|(k, _)| k == key) {
            Some((_, ok)) if ok.contains(&text.as_str()) => {}
            Some(_) => {
                return Err(keys.fail(
                    key,
                    format!("{text}: ipuc does not implement this option (it changes the pixels transformers makes)"),
                ))
            }
            None => tracing::warn!(
                "warning: {}: `{key}` ({text}) is not an option of transformers' image processors, which do not read it; ignored as they ignore it",
                keys.path.display()
            ),
        }
    }
    Ok(())
}

/// Parse the text of a `preprocessor_config.json` found at `path`.
pub(super) fn parse(text: &str, path: &Path) -> Result<ImageProcessor, ProcessorError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ProcessorError::Json {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let Some(map) = value.as_object() else {
        return Err(ProcessorError::Json {
            path: path.display().to_string(),
            message: "not a JSON object".into(),
        });
    };
    let keys = Keys { map, path };
    check_keys(&keys)?;
    let Some(class) = class_of(&keys)? else {
        return Err(keys.fail(
            "image_processor_type",
            "absent (and no `feature_extractor_type`): name the processor class",
        ));
    };
    build(&keys, class)
}

/// The class's defaults overridden by the file's keys, as transformers'
/// `_standardize_kwargs` reads them (an int `size` is square only where
/// `default_to_square`, an int `crop_size` always).
fn build(keys: &Keys, class: ProcessorClass) -> Result<ImageProcessor, ProcessorError> {
    let default = ImageProcessor::class_default(class, 224);
    let (default_resize, default_filter) = default.resize.expect("every class resizes");
    let square = keys.flag("default_to_square", class == ProcessorClass::Vit)?;
    let resize = keys.size("size", square)?.unwrap_or(default_resize);
    let filter = keys.resample(default_filter)?;
    let do_crop = keys.flag("do_center_crop", default.crop.is_some())?;
    let crop = match keys.size("crop_size", true)? {
        Some(Resize::Exact { height, width }) => Some((height, width)),
        Some(Resize::ShortestEdge(_)) => {
            return Err(keys.fail("crop_size", "a crop needs `height` and `width`"))
        }
        None if do_crop => Some(
            default
                .crop
                .ok_or_else(|| keys.fail("crop_size", "absent, but `do_center_crop` is true"))?,
        ),
        None => None,
    };
    let factor = match keys.present("rescale_factor") {
        None => 1.0 / 255.0,
        Some(v) => v
            .as_f64()
            .filter(|f| f.is_finite())
            .ok_or_else(|| keys.fail("rescale_factor", format!("{v} is not a number")))?,
    };
    let (dm, ds) = default.normalize.expect("every class normalises");
    let mean = keys.triple("image_mean")?.unwrap_or(dm);
    let std = keys.triple("image_std")?.unwrap_or(ds);
    if std.contains(&0.0) {
        return Err(keys.fail("image_std", "a zero standard deviation"));
    }
    // ipuc decodes every image to RGB; without `do_convert_rgb` transformers
    // keeps an RGB image as it is, so the pixels agree for RGB images.
    keys.flag("do_convert_rgb", true)?;
    Ok(ImageProcessor {
        class,
        resize: keys.flag("do_resize", true)?.then_some((resize, filter)),
        crop: if do_crop { crop } else { None },
        rescale: keys.flag("do_rescale", true)?.then_some(factor),
        normalize: keys.flag("do_normalize", true)?.then_some((mean, std)),
    })
}
