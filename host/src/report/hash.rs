//! SHA-256 of package bytes (the determinism check prints it).

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

/// The line the CLI prints after writing or reading a package.
pub fn package_hash_line(bytes: &[u8]) -> String {
    format!(
        "package: {} bytes, SHA-256 {}",
        bytes.len(),
        sha256_hex(bytes)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_test_vector() {
        // FIPS 180-2 example "abc".
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(package_hash_line(b"abc").starts_with("package: 3 bytes, SHA-256 ba7816bf"));
    }
}
