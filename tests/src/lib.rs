//! Shared helpers for the cross-crate suites in `tests/tests/`.

use std::collections::BTreeMap;

use ipuc::input::PixelValues;
use ipuc::model::PIXEL_VALUES;
use ipuc::weights::HostTensor;

/// A deterministic 28×28 RGB input in [-1, 1] for `siglip-small` runs.
pub fn small_pixels() -> PixelValues {
    PixelValues {
        shape: [1, 3, 28, 28],
        data: (0..3 * 28 * 28)
            .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
            .collect(),
    }
}

/// The device's input map for `pixels` (the `pixel_values` binding).
pub fn device_inputs(pixels: &PixelValues) -> BTreeMap<String, HostTensor> {
    BTreeMap::from([(
        PIXEL_VALUES.to_string(),
        HostTensor {
            shape: pixels.shape.to_vec(),
            data: pixels.data.clone(),
        },
    )])
}
