//! Minimal, strict reader/writer for NumPy `.npy` files holding little-endian
//! float32 arrays in C order: the only kind ipuc exchanges with Python.
//!
//! Format (NumPy NEP 1): magic `\x93NUMPY`, major/minor version, header length
//! (u16 for v1, u32 for v2/v3), an ASCII/UTF-8 Python dict literal with
//! `descr`, `fortran_order` and `shape`, padded with spaces and a newline so the
//! data starts 64-byte aligned, then the raw data.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// A float32 array read from or written to `.npy`.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// Elements in C (row-major) order.
    pub data: Vec<f32>,
}

/// What went wrong with an `.npy` file, and where.
#[derive(Debug)]
pub struct NpyError {
    /// The file.
    pub path: PathBuf,
    /// The problem.
    pub kind: NpyErrorKind,
}

/// The problem an [`NpyError`] reports.
#[derive(Debug)]
pub enum NpyErrorKind {
    /// Reading or writing failed.
    Io(std::io::Error),
    /// The first bytes are not the `.npy` magic.
    NotNpy,
    /// A version other than 1.0, 2.0, 3.0.
    UnsupportedVersion(u8, u8),
    /// The header dict could not be parsed.
    BadHeader(String),
    /// A dtype other than little-endian float32.
    UnsupportedDtype(String),
    /// Fortran-ordered data.
    FortranOrder,
    /// The data section is shorter or longer than the shape says.
    DataLength {
        /// Bytes the shape requires.
        expected: usize,
        /// Bytes present.
        found: usize,
    },
    /// An element is NaN or infinite where finite inputs are required.
    NonFinite {
        /// C-order element index.
        index: usize,
        /// The value.
        value: f32,
    },
    /// The data does not have the shape the caller needs.
    ShapeMismatch {
        /// What was required (`None` = any size along that axis).
        expected: Vec<Option<usize>>,
        /// What the file holds.
        found: Vec<usize>,
    },
}

impl fmt::Display for NpyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.path.display();
        match &self.kind {
            // The OS error is the source (printed once by the error chain).
            NpyErrorKind::Io(_) => write!(f, "{p}"),
            NpyErrorKind::NotNpy => write!(f, "{p}: not a .npy file (missing \\x93NUMPY magic)"),
            NpyErrorKind::UnsupportedVersion(a, b) => {
                write!(f, "{p}: unsupported .npy version {a}.{b}")
            }
            NpyErrorKind::BadHeader(why) => write!(f, "{p}: malformed .npy header: {why}"),
            NpyErrorKind::UnsupportedDtype(d) => write!(
                f,
                "{p}: dtype {d:?} not supported; ipuc reads little-endian float32 ('<f4') only"
            ),
            NpyErrorKind::FortranOrder => {
                write!(f, "{p}: Fortran-ordered arrays are not supported; save C order")
            }
            NpyErrorKind::DataLength { expected, found } => write!(
                f,
                "{p}: data section has {found} bytes but the header's shape needs {expected} (truncated or corrupt)"
            ),
            NpyErrorKind::NonFinite { index, value } => {
                write!(f, "{p}: element {index} is {value}; inputs must be finite")
            }
            NpyErrorKind::ShapeMismatch { expected, found } => {
                let exp: Vec<String> = expected
                    .iter()
                    .map(|d| d.map_or_else(|| "*".to_string(), |v| v.to_string()))
                    .collect();
                write!(
                    f,
                    "{p}: shape {found:?} does not match the expected [{}]",
                    exp.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for NpyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            NpyErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

fn err(path: &Path, kind: NpyErrorKind) -> NpyError {
    NpyError {
        path: path.to_path_buf(),
        kind,
    }
}

impl NpyArray {
    /// Element count of `shape` (1 for a scalar).
    pub fn element_count(shape: &[usize]) -> Option<usize> {
        shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
    }

    /// Read a float32 C-order `.npy` file.
    pub fn read(path: &Path) -> Result<NpyArray, NpyError> {
        let bytes = std::fs::read(path).map_err(|e| err(path, NpyErrorKind::Io(e)))?;
        Self::parse(&bytes).map_err(|kind| err(path, kind))
    }

    /// Parse `.npy` bytes.
    pub fn parse(bytes: &[u8]) -> Result<NpyArray, NpyErrorKind> {
        if bytes.len() < 10 || &bytes[..6] != MAGIC {
            return Err(NpyErrorKind::NotNpy);
        }
        let (major, minor) = (bytes[6], bytes[7]);
        let (header_len, header_start) = match major {
            1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
            2 | 3 => {
                if bytes.len() < 12 {
                    return Err(NpyErrorKind::BadHeader(
                        "file ends inside the header length".into(),
                    ));
                }
                let n = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
                (n as usize, 12)
            }
            _ => return Err(NpyErrorKind::UnsupportedVersion(major, minor)),
        };
        let data_start = header_start + header_len;
        if bytes.len() < data_start {
            return Err(NpyErrorKind::BadHeader(format!(
                "header claims {header_len} bytes but the file has only {}",
                bytes.len() - header_start
            )));
        }
        let header = std::str::from_utf8(&bytes[header_start..data_start])
            .map_err(|_| NpyErrorKind::BadHeader("header is not UTF-8".into()))?;
        let parsed = Header::parse(header)?;
        if parsed.descr != "<f4" && parsed.descr != "=f4" {
            return Err(NpyErrorKind::UnsupportedDtype(parsed.descr));
        }
        if parsed.fortran_order {
            return Err(NpyErrorKind::FortranOrder);
        }
        let count = Self::element_count(&parsed.shape)
            .ok_or_else(|| NpyErrorKind::BadHeader("shape element count overflows".into()))?;
        let expected = count
            .checked_mul(4)
            .ok_or_else(|| NpyErrorKind::BadHeader("shape byte size overflows".into()))?;
        let payload = &bytes[data_start..];
        if payload.len() != expected {
            return Err(NpyErrorKind::DataLength {
                expected,
                found: payload.len(),
            });
        }
        let data = payload
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(NpyArray {
            shape: parsed.shape,
            data,
        })
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

    /// Serialise as `.npy` version 1.0.
    pub fn to_bytes(&self) -> Vec<u8> {
        let dims: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        let shape = match dims.len() {
            1 => format!("({},)", dims[0]),
            _ => format!("({})", dims.join(", ")),
        };
        let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        // Pad with spaces so magic + version + len + header + '\n' is 64-aligned.
        let unpadded = MAGIC.len() + 2 + 2 + header.len() + 1;
        header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
        header.push('\n');
        let mut out = Vec::with_capacity(10 + header.len() + self.data.len() * 4);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[1, 0]);
        // A v1 header is at most u16::MAX bytes; ours is a few dozen plus the
        // shape digits, far below that for any shape with < 1000 dims.
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        for v in &self.data {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Write as `.npy` version 1.0.
    pub fn write(&self, path: &Path) -> Result<(), NpyError> {
        let bytes = self.to_bytes();
        std::fs::File::create(path)
            .and_then(|mut f| f.write_all(&bytes))
            .map_err(|e| err(path, NpyErrorKind::Io(e)))
    }
}

/// The three keys of an `.npy` header dict.
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

impl Header {
    /// Parse the Python dict literal NumPy writes, e.g.
    /// `{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 28, 28), }`.
    fn parse(text: &str) -> Result<Header, NpyErrorKind> {
        let bad = |why: &str| NpyErrorKind::BadHeader(format!("{why} in {:?}", text.trim_end()));
        let body = text
            .trim()
            .strip_prefix('{')
            .and_then(|t| t.strip_suffix('}'))
            .ok_or_else(|| bad("not a dict"))?;
        let value_of = |key: &str| -> Option<&str> {
            let k1 = format!("'{key}'");
            let k2 = format!("\"{key}\"");
            let at = body
                .find(&k1)
                .map(|i| i + k1.len())
                .or_else(|| body.find(&k2).map(|i| i + k2.len()))?;
            let rest = body[at..].trim_start().strip_prefix(':')?.trim_start();
            Some(rest)
        };
        let descr_rest = value_of("descr").ok_or_else(|| bad("no 'descr'"))?;
        let quote = descr_rest
            .chars()
            .next()
            .ok_or_else(|| bad("empty 'descr'"))?;
        if quote != '\'' && quote != '"' {
            return Err(bad(
                "'descr' is not a string (structured dtypes are unsupported)",
            ));
        }
        let descr_end = descr_rest[1..]
            .find(quote)
            .ok_or_else(|| bad("unterminated 'descr'"))?;
        let descr = descr_rest[1..1 + descr_end].to_string();

        let fo = value_of("fortran_order").ok_or_else(|| bad("no 'fortran_order'"))?;
        let fortran_order = if fo.starts_with("False") {
            false
        } else if fo.starts_with("True") {
            true
        } else {
            return Err(bad("'fortran_order' is neither True nor False"));
        };

        let sh = value_of("shape").ok_or_else(|| bad("no 'shape'"))?;
        let sh = sh
            .strip_prefix('(')
            .ok_or_else(|| bad("'shape' is not a tuple"))?;
        let close = sh.find(')').ok_or_else(|| bad("unterminated 'shape'"))?;
        let shape = sh[..close]
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.trim_end_matches('L').parse::<usize>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| bad("'shape' holds a non-integer"))?;
        Ok(Header {
            descr,
            fortran_order,
            shape,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_aligns() {
        for shape in [vec![], vec![5], vec![1, 3, 2, 2]] {
            let n = NpyArray::element_count(&shape).unwrap_or(0);
            let a = NpyArray {
                data: (0..n).map(|i| i as f32 * 0.5 - 1.0).collect(),
                shape,
            };
            let bytes = a.to_bytes();
            let hl = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            assert_eq!((10 + hl) % 64, 0);
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
        .to_bytes();
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
}
