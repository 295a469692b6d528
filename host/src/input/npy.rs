//! `.npy` files holding little-endian float32 arrays in C order (the only
//! kind ipuc exchanges with Python), read and written by the `npyz` crate.
//! This module keeps ipuc's strict checks and typed errors around it: the
//! dtype must be `<f4`, the order C, the data exactly as long as the shape
//! says.

use std::path::{Path, PathBuf};

use npyz::WriterBuilder;

/// The `.npy` magic (NumPy NEP 1): files without it are "not `.npy`".
const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// A float32 array read from or written to `.npy`.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// Elements in C (row-major) order.
    pub data: Vec<f32>,
}

/// What went wrong with an `.npy` file, and where: `path: kind`, with the
/// OS error (if any) as this error's source, so an error chain prints every
/// cause once.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct NpyError {
    /// The file.
    pub path: PathBuf,
    /// The problem.
    pub kind: NpyErrorKind,
    /// The OS error of an [`NpyErrorKind::Read`] or [`NpyErrorKind::Write`].
    #[source]
    pub io: Option<std::io::Error>,
}

impl NpyError {
    /// `kind` at `path` (no OS error).
    pub fn new(path: &Path, kind: NpyErrorKind) -> Self {
        NpyError {
            path: path.to_path_buf(),
            kind,
            io: None,
        }
    }

    /// Reading (`kind` [`NpyErrorKind::Read`]) or writing `path` failed
    /// with `io`.
    fn io(path: &Path, kind: NpyErrorKind, io: std::io::Error) -> Self {
        NpyError {
            io: Some(io),
            ..Self::new(path, kind)
        }
    }
}

/// The problem an [`NpyError`] reports.
#[derive(Debug, thiserror::Error)]
pub enum NpyErrorKind {
    /// Reading failed (the OS error is [`NpyError::io`]).
    #[error("cannot be read")]
    Read,
    /// Writing failed (the OS error is [`NpyError::io`]); the previous
    /// file, if any, is intact.
    #[error("cannot be written")]
    Write,
    /// The first bytes are not the `.npy` magic.
    #[error("not a .npy file (missing \\x93NUMPY magic)")]
    NotNpy,
    /// A version other than 1.0, 2.0, 3.0.
    #[error("unsupported .npy version {0}.{1}")]
    UnsupportedVersion(u8, u8),
    /// The header could not be parsed.
    #[error("malformed .npy header: {0}")]
    BadHeader(String),
    /// A dtype other than little-endian float32.
    #[error("dtype {0:?} not supported; ipuc reads little-endian float32 ('<f4') only")]
    UnsupportedDtype(String),
    /// Fortran-ordered data.
    #[error("Fortran-ordered arrays are not supported; save C order")]
    FortranOrder,
    /// The data section is shorter or longer than the shape says.
    #[error("data section has {found} bytes but the header's shape needs {expected} (truncated or corrupt)")]
    DataLength {
        /// Bytes the shape requires.
        expected: usize,
        /// Bytes present.
        found: usize,
    },
    /// An element is NaN or infinite where finite inputs are required.
    #[error("element {index} is {value}; inputs must be finite")]
    NonFinite {
        /// C-order element index.
        index: usize,
        /// The value.
        value: f32,
    },
    /// The data does not have the shape the caller needs.
    #[error("shape {found:?} does not match the expected [{}]", dims(expected))]
    ShapeMismatch {
        /// What was required (`None` = any size along that axis).
        expected: Vec<Option<usize>>,
        /// What the file holds.
        found: Vec<usize>,
    },
}

fn dims(expected: &[Option<usize>]) -> String {
    expected
        .iter()
        .map(|d| d.map_or_else(|| "*".to_string(), |v| v.to_string()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn err(path: &Path, kind: NpyErrorKind) -> NpyError {
    NpyError::new(path, kind)
}

impl NpyArray {
    /// Element count of `shape` (1 for a scalar).
    pub fn element_count(shape: &[usize]) -> Option<usize> {
        shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
    }

    /// Read a float32 C-order `.npy` file.
    pub fn read(path: &Path) -> Result<NpyArray, NpyError> {
        let bytes = crate::fsio::read_bounded(path, crate::fsio::Limit::NPY)
            .map_err(|e| NpyError::io(path, NpyErrorKind::Read, e))?;
        Self::parse(&bytes).map_err(|kind| err(path, kind))
    }

    /// Parse `.npy` bytes.
    pub fn parse(bytes: &[u8]) -> Result<NpyArray, NpyErrorKind> {
        if bytes.len() < 10 || &bytes[..6] != MAGIC {
            return Err(NpyErrorKind::NotNpy);
        }
        let (major, minor) = (bytes[6], bytes[7]);
        if !matches!((major, minor), (1..=3, 0)) {
            return Err(NpyErrorKind::UnsupportedVersion(major, minor));
        }
        // The header reader consumes the header; what is left is the data.
        let mut data: &[u8] = bytes;
        let header = npyz::NpyHeader::from_reader(&mut data)
            .map_err(|e| NpyErrorKind::BadHeader(e.to_string()))?;
        let descr = header.dtype().descr();
        if descr != "'<f4'" {
            return Err(NpyErrorKind::UnsupportedDtype(
                descr.trim_matches('\'').to_string(),
            ));
        }
        if header.order() == npyz::Order::Fortran {
            return Err(NpyErrorKind::FortranOrder);
        }
        let shape = header
            .shape()
            .iter()
            .map(|&d| usize::try_from(d))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| NpyErrorKind::BadHeader("shape does not fit this machine".into()))?;
        let expected = Self::element_count(&shape)
            .and_then(|n| n.checked_mul(4))
            .ok_or_else(|| NpyErrorKind::BadHeader("shape byte size overflows".into()))?;
        if data.len() != expected {
            return Err(NpyErrorKind::DataLength {
                expected,
                found: data.len(),
            });
        }
        let data = npyz::NpyFile::with_header(header, data)
            .into_vec::<f32>()
            .map_err(|e| NpyErrorKind::BadHeader(e.to_string()))?;
        Ok(NpyArray { shape, data })
    }

    /// Require the shape to match `expected` (`None` = any extent on that axis).
    pub fn expect_shape(&self, path: &Path, expected: &[Option<usize>]) -> Result<(), NpyError> {
        let ok = self.shape.len() == expected.len()
            && self
                .shape
                .iter()
                .zip(expected)
                .all(|(&d, e)| e.is_none_or(|e| e == d));
        if ok {
            Ok(())
        } else {
            Err(err(
                path,
                NpyErrorKind::ShapeMismatch {
                    expected: expected.to_vec(),
                    found: self.shape.clone(),
                },
            ))
        }
    }

    /// Serialise as `.npy` (little-endian float32, C order).
    pub fn to_bytes(&self) -> std::io::Result<Vec<u8>> {
        let shape: Vec<u64> = self.shape.iter().map(|&d| d as u64).collect();
        let mut out = Vec::with_capacity(128 + self.data.len() * 4);
        let mut w = npyz::WriteOptions::<f32>::new()
            .default_dtype()
            .shape(&shape)
            .writer(&mut out)
            .begin_nd()?;
        w.extend(self.data.iter().copied())?;
        w.finish()?;
        Ok(out)
    }

    /// Write as `.npy`.
    pub fn write(&self, path: &Path) -> Result<(), NpyError> {
        self.to_bytes()
            .and_then(|bytes| crate::fsio::write_atomic(path, &bytes))
            .map_err(|e| NpyError::io(path, NpyErrorKind::Write, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_the_crate_and_aligns() {
        for shape in [vec![], vec![5], vec![1, 3, 2, 2]] {
            let n = NpyArray::element_count(&shape).unwrap_or(0);
            let a = NpyArray {
                data: (0..n).map(|i| i as f32 * 0.5 - 1.0).collect(),
                shape,
            };
            let bytes = a.to_bytes().unwrap();
            assert_eq!(&bytes[..6], MAGIC);
            let hl = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            assert_eq!((10 + hl) % 64, 0, "data 64-byte aligned as NumPy writes it");
            assert_eq!(NpyArray::parse(&bytes).unwrap(), a);
        }
    }

    #[test]
    fn parses_numpy_written_header() {
        let mut h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }".to_string();
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend_from_slice(&(h.len() as u16).to_le_bytes());
        b.extend_from_slice(h.as_bytes());
        b.extend_from_slice(&1.5f32.to_le_bytes());
        b.extend_from_slice(&(-2.0f32).to_le_bytes());
        let a = NpyArray::parse(&b).unwrap();
        assert_eq!(a.shape, vec![2, 1]);
        assert_eq!(a.data, vec![1.5, -2.0]);
        // Truncated data.
        let short = &b[..b.len() - 1];
        assert!(matches!(
            NpyArray::parse(short),
            Err(NpyErrorKind::DataLength {
                expected: 8,
                found: 7
            })
        ));
        // float64 rejected by name.
        let mut b64 = b.clone();
        let pos = b64.windows(3).position(|w| w == b"<f4").unwrap();
        b64[pos + 2] = b'8';
        match NpyArray::parse(&b64) {
            Err(NpyErrorKind::UnsupportedDtype(d)) => assert_eq!(d, "<f8"),
            other => panic!("expected dtype error, got {other:?}"),
        }
        // Fortran order rejected.
        // (The magic's \x93 is not UTF-8: edit the header bytes in place.)
        let mut fo = b.clone();
        let pos = fo.windows(5).position(|w| w == b"False").unwrap();
        fo[pos..pos + 5].copy_from_slice(b"True ");
        assert!(matches!(
            NpyArray::parse(&fo),
            Err(NpyErrorKind::FortranOrder)
        ));
    }

    #[test]
    fn rejects_garbage() {
        assert!(matches!(
            NpyArray::parse(b"PK\x03\x04 zip"),
            Err(NpyErrorKind::NotNpy)
        ));
        let mut b = NpyArray {
            shape: vec![1],
            data: vec![0.0],
        }
        .to_bytes()
        .unwrap();
        b[6] = 9;
        assert!(matches!(
            NpyArray::parse(&b),
            Err(NpyErrorKind::UnsupportedVersion(9, 0))
        ));
    }

    #[test]
    fn shape_check_names_both_shapes() {
        let a = NpyArray {
            shape: vec![1, 3, 4, 4],
            data: vec![0.0; 48],
        };
        let e = a
            .expect_shape(Path::new("x.npy"), &[None, Some(3), Some(8), Some(8)])
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("x.npy") && msg.contains("[1, 3, 4, 4]") && msg.contains("[*, 3, 8, 8]"),
            "{msg}"
        );
    }

    /// Files NumPy wrote (the HF fixtures) read through the crate and write
    /// back with the same 64-byte-aligned data section, byte for byte, and a
    /// header that reads back to the same array (npyz spells the shape
    /// tuple `(1, 9, 48, )` where NumPy writes `(1, 9, 48)`: both are valid).
    #[test]
    fn numpy_written_fixtures_round_trip() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/siglip");
        let mut files = Vec::new();
        for sub in std::fs::read_dir(&dir).unwrap() {
            let sub = sub.unwrap().path();
            if !sub.is_dir() {
                continue;
            }
            for f in std::fs::read_dir(sub).unwrap() {
                let f = f.unwrap().path();
                if f.extension().is_some_and(|e| e == "npy") {
                    files.push(f);
                }
            }
        }
        assert!(
            files.len() >= 10,
            "fixtures missing under {}",
            dir.display()
        );
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            let a = NpyArray::read(&f).unwrap();
            assert_eq!(Some(a.data.len()), NpyArray::element_count(&a.shape));
            let ours = a.to_bytes().unwrap();
            let data_at = |b: &[u8]| 10 + usize::from(u16::from_le_bytes([b[8], b[9]]));
            assert_eq!(data_at(&ours), data_at(&bytes), "{}", f.display());
            assert!(
                ours[data_at(&ours)..] == bytes[data_at(&bytes)..],
                "{}: data section differs",
                f.display()
            );
            assert_eq!(NpyArray::parse(&ours).unwrap(), a, "{}", f.display());
        }
    }
}
