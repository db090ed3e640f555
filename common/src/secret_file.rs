//! Secret files a harness keeps in its state directory (the push key, the local token
//! key): each written once, whole, readable by its owner only, so processes starting
//! side by side on one directory agree on one key and none reads a half-written file.

use std::path::{Path, PathBuf};

/// Writes `text` to `path` only if nothing is there, atomically: a new temporary file
/// (mode 0600; `create_new` follows no link) hard-linked into place. Losing a race to
/// another process is not an error.
pub fn write_once(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp: PathBuf = path.with_extension(format!("tmp.{}", uuid::Uuid::new_v4()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let result = options
        .open(&tmp)
        .and_then(|mut f| {
            std::io::Write::write_all(&mut f, text.as_bytes())?;
            f.sync_all()
        })
        .and_then(|()| match std::fs::hard_link(&tmp, path) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            other => other,
        });
    let _ = std::fs::remove_file(&tmp);
    result
}
