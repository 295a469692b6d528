//! SHA-256 of package bytes (the determinism check prints it).

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The line the CLI prints after writing or reading a package: its size and
/// its digest (the SHA-256 of the canonical bytes, stored at its end and
/// verified by the reader).
pub fn package_hash_line(bytes: &[u8]) -> String {
    format!(
        "package: {} bytes, SHA-256 {}",
        bytes.len(),
        ipuc_target::package::digest_hex(bytes)
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
        // Too short to be a package: the hash of all of it.
        assert!(package_hash_line(b"abc").starts_with("package: 3 bytes, SHA-256 ba7816bf"));
        let p = ipuc_target::package::write(&ipuc_target::package::Package::new("t")).unwrap();
        let body = &p[..p.len() - ipuc_target::package::DIGEST_BYTES];
        assert!(package_hash_line(&p).ends_with(&sha256_hex(body)));
    }
}
