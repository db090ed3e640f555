//! Secret files a harness keeps in its state directory (the push key, the local token
//! key): each written once, whole, readable by its owner only, so processes starting
//! side by side on one directory agree on one key and none reads a half-written file.
//! And the state directory itself: its owner's only (0700, its files 0600), made so, and
//! tightened if found wider.

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

/// Creates `dir` (and its parents) readable by its owner only (0700), or tightens it to
/// 0700 if it is there with wider permissions; says whether it tightened it.
pub fn private_dir(dir: &Path) -> std::io::Result<bool> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    tighten(dir, 0o700)
}

/// Tightens the file at `path`, if there is one, to its owner only (0600); says whether
/// it did.
pub fn private_file(path: &Path) -> std::io::Result<bool> {
    match tighten(path, 0o600) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        other => other,
    }
}

#[cfg(unix)]
fn tighten(path: &Path, mode: u32) -> std::io::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    let now = std::fs::metadata(path)?.permissions().mode() & 0o777;
    if now & 0o077 == 0 {
        return Ok(false);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    Ok(true)
}

#[cfg(not(unix))]
fn tighten(_path: &Path, _mode: u32) -> std::io::Result<bool> {
    Ok(false)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_state_directory_is_made_and_kept_its_owners_only() {
        let root = std::env::temp_dir().join(format!("private-{}", uuid::Uuid::new_v4()));
        let dir = root.join("state");
        assert!(!private_dir(&dir).unwrap(), "made so, nothing to tighten");
        assert_eq!(mode(&dir), 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let file = dir.join("f");
        std::fs::write(&file, "x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(private_dir(&dir).unwrap() && private_file(&file).unwrap());
        assert_eq!((mode(&dir), mode(&file)), (0o700, 0o600));
        assert!(!private_file(&dir.join("missing")).unwrap());
        let _ = std::fs::remove_dir_all(root);
    }
}
