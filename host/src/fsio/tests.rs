use std::io;
use std::path::Path;

use super::*;

fn fs_error(e: &io::Error) -> &FsError {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<FsError>())
        .unwrap_or_else(|| panic!("not an FsError: {e}"))
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[test]
fn atomic_write_replaces_a_symlink_not_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.txt");
    std::fs::write(&target, "keep me").unwrap();
    let link = dir.path().join("out.txt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    write_atomic(&link, b"new").unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
    assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn failed_write_keeps_the_previous_file_and_no_temporary() {
    let dir = tempfile::tempdir().unwrap();
    // A directory at the path: the rename fails after the data was written.
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("inside"), "x").unwrap();
    let e = write_atomic(&out, b"new").unwrap_err();
    // The OS error alone: the caller names the path; the temporary's name
    // (which tempfile adds) is noise.
    let text = e.to_string();
    assert!(
        !text.contains(".tmp") && !text.contains("at path"),
        "{text}"
    );
    assert!(out.join("inside").exists());
    assert!(leftovers(dir.path()).is_empty());
    let e = check_writable(&out, OutputKind::File).unwrap_err();
    assert!(matches!(fs_error(&e), FsError::NotWritable { .. }), "{e}");
}

#[test]
fn missing_directory_is_reported_before_work() {
    let dir = tempfile::tempdir().unwrap();
    let e = check_writable(&dir.path().join("no/such/out.ipuc"), OutputKind::File).unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
    check_writable(&dir.path().join("out.ipuc"), OutputKind::File).unwrap();
    assert!(leftovers(dir.path()).is_empty());
    check_writable_dir(&dir.path().join("a/b")).unwrap();
    assert!(dir.path().join("a/b").is_dir());
}

#[test]
fn reads_refuse_fifos_devices_and_directories_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = read_bounded(&fifo, Limit::CONFIG).unwrap_err();
    assert!(e.to_string().contains("FIFO"), "{e}");
    let zero = dir.path().join("zero");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let e = read_bounded(&zero, Limit::CONFIG).unwrap_err();
    assert!(e.to_string().contains("character device"), "{e}");
    let e = read_bounded(dir.path(), Limit::CONFIG).unwrap_err();
    assert!(e.to_string().contains("directory"), "{e}");
}

/// Every caller names the file it reads or writes, so the errors here
/// leave the path out (it would appear twice: `reading X: X: …`).
#[test]
fn errors_leave_the_path_to_the_caller() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(Limit::CONFIG.bytes + 1)
        .unwrap();
    let missing = dir.path().join("no/such/x");
    for (path, e) in [
        (
            dir.path(),
            read_bounded(dir.path(), Limit::CONFIG).unwrap_err(),
        ),
        (
            big.as_path(),
            read_bounded(&big, Limit::CONFIG).unwrap_err(),
        ),
        (
            dir.path(),
            check_writable(dir.path(), OutputKind::File).unwrap_err(),
        ),
        (
            missing.as_path(),
            check_writable(&missing, OutputKind::File).unwrap_err(),
        ),
    ] {
        let text = e.to_string();
        assert!(!text.contains(path.to_str().unwrap()), "{text}");
    }
}

#[test]
fn oversized_file_is_refused_from_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.json");
    // Sparse: no data is written, only the length is set.
    std::fs::File::create(&big)
        .unwrap()
        .set_len(Limit::CONFIG.bytes + 1)
        .unwrap();
    let e = read_bounded(&big, Limit::CONFIG).unwrap_err();
    assert!(matches!(fs_error(&e), FsError::TooLarge { .. }), "{e}");
    std::fs::write(&big, "{}").unwrap();
    assert_eq!(read_string_bounded(&big, Limit::CONFIG).unwrap(), "{}");
}

/// A package body with the given sections (tag, declared length, body).
fn package_file(dir: &Path, name: &str, declared: &[u64], pad_to: u64) -> std::path::PathBuf {
    let mut bytes = ipuc_target::package::MAGIC.to_vec();
    bytes.extend_from_slice(&2u16.to_le_bytes());
    bytes.extend_from_slice(&0u16.to_le_bytes());
    for (tag, &len) in (1u32..).zip(declared) {
        bytes.extend_from_slice(&tag.to_le_bytes());
        bytes.extend_from_slice(&len.to_le_bytes());
    }
    let path = dir.join(name);
    std::fs::write(&path, &bytes).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(pad_to)
        .unwrap();
    path
}

#[test]
fn package_whose_sections_lie_is_refused_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    // 1 GiB sparse, its first section claiming 2^40 bytes: refused from a
    // few header reads (walked above 64 MiB, as `read_package` does).
    let lie = package_file(dir.path(), "lie.ipuc", &[1 << 40], 1 << 30);
    let t = std::time::Instant::now();
    let e = read_package(&lie).unwrap_err();
    assert!(t.elapsed().as_secs_f64() < 1.0);
    assert!(
        e.to_string()
            .contains("section 1 declares 1099511627776 bytes"),
        "{e}"
    );
    // Seven empty sections and a digest: the layout adds up, so the bytes
    // are read (and left to the package reader to judge).
    let total = 12 + 8 * 12 + 32;
    let fits = package_file(dir.path(), "fits.ipuc", &[0; 8], total);
    assert_eq!(
        package::read_package_walking_above(&fits, 0).unwrap().len() as u64,
        total
    );
    let short = package_file(dir.path(), "short.ipuc", &[0; 8], total + 5);
    let e = package::read_package_walking_above(&short, 0).unwrap_err();
    assert!(
        e.to_string().contains("the sections end at byte 108"),
        "{e}"
    );
    // A real package walks to its end (every section of the format).
    let bytes = ipuc_target::package::write(&ipuc_target::package::Package::new("walk")).unwrap();
    let real = dir.path().join("real.ipuc");
    std::fs::write(&real, &bytes).unwrap();
    assert_eq!(
        package::read_package_walking_above(&real, 0).unwrap(),
        bytes
    );
    // Too large for any package: refused from metadata.
    let huge = dir.path().join("huge.ipuc");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(Limit::PACKAGE.bytes + 1)
        .unwrap();
    let e = read_package(&huge).unwrap_err();
    assert!(matches!(fs_error(&e), FsError::TooLarge { .. }), "{e}");
}

/// A temporary left by a writer killed with SIGKILL (its process gone) is
/// removed by the next write to the same path; a live writer's is kept.
#[test]
fn the_next_write_removes_a_killed_writers_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.bin");
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = dir.path().join(format!(".out.bin.{dead}.abc123.tmp"));
    std::fs::write(&stale, "cut").unwrap();
    let live = dir
        .path()
        .join(format!(".out.bin.{}.def456.tmp", std::process::id()));
    std::fs::write(&live, "in flight").unwrap();
    write_atomic(&out, b"new").unwrap();
    assert!(!stale.exists(), "a dead writer's temporary stays");
    assert!(live.exists(), "a live writer's temporary was removed");
    assert_eq!(std::fs::read(&out).unwrap(), b"new");
}

/// #44: a valid output name of 250 (or 255) bytes is written: its hidden
/// temporary's name is cut to fit `NAME_MAX`, and a later write to the
/// same name still finds (and removes) a dead writer's temporary.
#[test]
fn an_output_name_of_255_bytes_is_written() {
    let dir = tempfile::tempdir().unwrap();
    for len in [250, 255] {
        let name = "n".repeat(len - 4) + ".npy";
        let path = dir.path().join(&name);
        check_writable(&path, OutputKind::File).unwrap();
        write_atomic(&path, b"data").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"data");
        let stem = temporary_stem(&name);
        assert!(stem.len() + 23 <= 255, "{}", stem.len());
        assert!(name.starts_with(stem));
    }
    assert!(leftovers(dir.path()).is_empty());
    // A multi-byte character straddling the cut is left out whole.
    let wide = "é".repeat(127);
    assert!(temporary_stem(&wide).len() < wide.len());
    assert!(wide.starts_with(temporary_stem(&wide)));
}
