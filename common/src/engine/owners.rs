//! Lease owners that can prove they are gone. A harness-local process names itself with a
//! fresh owner id and holds an exclusive lock on `<state>/owners/<owner>.lock` for as long
//! as it lives; the OS lets go of the lock when the process ends, however it ends (a
//! SIGKILL too). Another process that can take that lock knows the owner is gone, so the
//! sweep takes its leases at once instead of waiting for them to run out. An owner with no
//! file there (a process on another machine, a Lambda environment, a build before owners
//! were unique) is never known to be gone: its leases lapse.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct LockFiles {
    dir: PathBuf,
    owner: String,
    /// Held locked for the life of the process.
    _own: File,
}

const SUFFIX: &str = ".lock";

impl LockFiles {
    /// A new owner for this process, its file in `dir` (created) locked.
    pub fn claim(dir: &Path) -> io::Result<Self> {
        crate::secret_file::private_dir(dir)?;
        let owner = format!(
            "local-{}-{}",
            std::process::id(),
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        // Locked under another name first, so no one sees the file unlocked and takes the
        // new owner for a gone one.
        let staging = dir.join(format!(".{owner}"));
        let mut options = OpenOptions::new();
        options.create_new(true).write(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let own = options.open(&staging)?;
        own.try_lock().map_err(io::Error::other)?;
        std::fs::rename(&staging, dir.join(format!("{owner}{SUFFIX}")))?;
        Ok(LockFiles {
            dir: dir.to_owned(),
            owner,
            _own: own,
        })
    }

    /// This process's owner id.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The owners whose process has ended: their file is there and its lock is free.
    pub fn gone(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let owner = name.strip_suffix(SUFFIX)?.to_owned();
                let file = File::open(e.path()).ok()?;
                (owner != self.owner && file.try_lock().is_ok()).then_some(owner)
            })
            .collect()
    }

    /// Removes the files of gone owners whose leases have all been taken.
    pub fn forget(&self, gone: &[String]) {
        for owner in gone.iter().filter(|o| **o != self.owner) {
            let path = self.dir.join(format!("{owner}{SUFFIX}"));
            // Checked again under the lock: a file is removed only while provably free.
            let free = File::open(&path).is_ok_and(|f| f.try_lock().is_ok());
            if free {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_gone_once_its_lock_is_let_go() {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let dir = tmp.path();
        let a = LockFiles::claim(dir).expect("a");
        let b = LockFiles::claim(dir).expect("b");
        assert_ne!(a.owner(), b.owner());
        assert!(a.gone().is_empty(), "b lives");
        let b_owner = b.owner().to_owned();
        drop(b);
        assert_eq!(a.gone(), vec![b_owner.clone()]);
        a.forget(&a.gone());
        assert!(a.gone().is_empty());
        assert!(!dir.join(format!("{b_owner}{SUFFIX}")).exists());
    }
}
