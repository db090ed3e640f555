//! The deployment's sealing key: 256 bits that seal webhook secrets at rest (see
//! `push::seal`) and from which other keys are derived (answer links). Read from its
//! base64 text or kept in a secret file of the state directory; never shown in logs or
//! `Debug` output.

use std::path::Path;

use aes_gcm::aead::{KeyInit, OsRng};
use aes_gcm::{Aes256Gcm, Key};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SealError {
    #[error("the push key must be 32 bytes, base64-encoded (e.g. `openssl rand -base64 32`): {0}")]
    BadKey(String),
    #[error("cannot read or create the push key file {path}: {error}")]
    KeyFile { path: String, error: String },
    #[error("a webhook secret does not open with this push key (was the key changed?)")]
    WrongKey,
}

/// The 256-bit key webhook secrets are sealed with.
#[derive(Clone)]
pub struct PushKey(Key<Aes256Gcm>);

impl std::fmt::Debug for PushKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PushKey(<redacted>)")
    }
}

impl std::str::FromStr for PushKey {
    type Err = SealError;

    /// A key from its base64 text (standard or URL-safe alphabet, padding optional).
    fn from_str(text: &str) -> Result<Self, SealError> {
        let text = text.trim();
        let bytes = STANDARD
            .decode(text)
            .or_else(|_| URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')))
            .map_err(|e| SealError::BadKey(e.to_string()))?;
        if bytes.len() != 32 {
            return Err(SealError::BadKey(format!("got {} bytes", bytes.len())));
        }
        Ok(PushKey(*Key::<Aes256Gcm>::from_slice(&bytes)))
    }
}

impl PushKey {
    /// A key of its own for another use (`label` names it), derived with HMAC-SHA256, so
    /// one secret of the deployment serves both without either use revealing the other.
    pub fn derive(&self, label: &[u8]) -> [u8; 32] {
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, self.0.as_slice());
        let mut out = [0u8; 32];
        out.copy_from_slice(ring::hmac::sign(&key, label).as_ref());
        out
    }

    /// A fresh random key.
    pub fn generate() -> Self {
        PushKey(Aes256Gcm::generate_key(OsRng))
    }

    /// The key in the file at `path`, or, if there is no such file, a new key written
    /// there (readable by its owner only): how a local state directory keeps its key.
    pub fn load_or_create(path: &Path) -> Result<Self, SealError> {
        let file_error = |e: std::io::Error| SealError::KeyFile {
            path: path.display().to_string(),
            error: e.to_string(),
        };
        match std::fs::read_to_string(path) {
            Ok(text) => text.parse(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = PushKey::generate().encoded();
                // Another process may win the race: its key is the one kept.
                crate::secret_file::write_once(path, &format!("{key}\n")).map_err(file_error)?;
                std::fs::read_to_string(path).map_err(file_error)?.parse()
            }
            Err(e) => Err(file_error(e)),
        }
    }

    fn encoded(&self) -> String {
        STANDARD.encode(self.0.as_slice())
    }

    pub(crate) fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_from_base64_of_32_bytes_only_and_never_print() {
        let key = PushKey::generate();
        let again: PushKey = key.encoded().parse().unwrap();
        assert_eq!(again.0, key.0);
        assert!(matches!(
            "c2hvcnQ=".parse::<PushKey>(),
            Err(SealError::BadKey(_))
        ));
        assert!(matches!(
            "not base64!".parse::<PushKey>(),
            Err(SealError::BadKey(_))
        ));
        assert_eq!(format!("{key:?}"), "PushKey(<redacted>)");
    }

    #[test]
    fn a_key_file_is_created_once_owner_only_and_read_back() {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let dir = tmp.path();
        let path = dir.join("push.key");
        let first = PushKey::load_or_create(&path).unwrap();
        let second = PushKey::load_or_create(&path).unwrap();
        assert_eq!(first.0, second.0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
