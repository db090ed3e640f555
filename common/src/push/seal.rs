//! Webhook secrets at rest: a config's `token` and `authentication.credentials` are
//! sealed with AES-256-GCM under the deployment's push key before they are stored, bound
//! to their task and config ids (a sealed value copied onto another config does not
//! open). The key never appears in logs or `Debug` output.

use std::path::Path;

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::a2a::{AuthenticationInfo, TaskPushNotificationConfig};

/// Marks the sealing format, so a later one can be told apart.
const VERSION: &str = "v1.";
const NONCE_LEN: usize = 12;

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

    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(&self.0)
    }

    /// Takes the secrets out of `config` and returns them sealed ("" when it has none).
    pub fn seal(&self, config: &mut TaskPushNotificationConfig) -> String {
        let secrets = Secrets {
            token: std::mem::take(&mut config.token),
            credentials: config
                .authentication
                .as_mut()
                .map(|a| std::mem::take(&mut a.credentials))
                .unwrap_or_default(),
        };
        if secrets.token.is_empty() && secrets.credentials.is_empty() {
            return String::new();
        }
        let plain = serde_json::to_vec(&secrets).unwrap_or_default();
        let nonce = Aes256Gcm::generate_nonce(OsRng);
        let aad = bound_to(config);
        // Encrypting into a Vec fails only on allocation limits far above a config's size.
        let sealed = self
            .cipher()
            .encrypt(
                &nonce,
                Payload {
                    msg: &plain,
                    aad: aad.as_bytes(),
                },
            )
            .unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        format!("{VERSION}{}", URL_SAFE_NO_PAD.encode(out))
    }

    /// Puts the secrets `sealed` holds back into `config`.
    pub fn open(
        &self,
        config: &mut TaskPushNotificationConfig,
        sealed: &str,
    ) -> Result<(), SealError> {
        if sealed.is_empty() {
            return Ok(());
        }
        let bytes = sealed
            .strip_prefix(VERSION)
            .and_then(|b| URL_SAFE_NO_PAD.decode(b).ok())
            .filter(|b| b.len() > NONCE_LEN)
            .ok_or(SealError::WrongKey)?;
        let (nonce, body) = bytes.split_at(NONCE_LEN);
        let aad = bound_to(config);
        let plain = self
            .cipher()
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: body,
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| SealError::WrongKey)?;
        let secrets: Secrets = serde_json::from_slice(&plain).map_err(|_| SealError::WrongKey)?;
        config.token = secrets.token;
        if !secrets.credentials.is_empty() {
            config
                .authentication
                .get_or_insert_with(AuthenticationInfo::default)
                .credentials = secrets.credentials;
        }
        Ok(())
    }
}

#[derive(Serialize, Deserialize)]
struct Secrets {
    #[serde(default)]
    token: String,
    #[serde(default)]
    credentials: String,
}

/// What a sealed value is bound to: its task and config.
fn bound_to(config: &TaskPushNotificationConfig) -> String {
    format!("{}\n{}", config.task_id, config.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> TaskPushNotificationConfig {
        TaskPushNotificationConfig {
            id: "c1".into(),
            task_id: "t1".into(),
            url: "https://hooks.example/a".into(),
            token: "tok-secret".into(),
            authentication: Some(AuthenticationInfo {
                scheme: "Bearer".into(),
                credentials: "cred-secret".into(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn sealing_takes_the_secrets_out_and_opening_puts_them_back() {
        let key = PushKey::generate();
        let mut c = config();
        let sealed = key.seal(&mut c);
        assert!(c.token.is_empty());
        assert_eq!(
            c.authentication.as_ref().map(|a| a.credentials.as_str()),
            Some("")
        );
        assert!(!sealed.contains("secret"), "{sealed}");
        key.open(&mut c, &sealed).unwrap();
        assert_eq!(c, config());
    }

    #[test]
    fn another_key_or_another_config_cannot_open_it() {
        let key = PushKey::generate();
        let mut c = config();
        let sealed = key.seal(&mut c);
        assert_eq!(
            PushKey::generate().open(&mut c.clone(), &sealed),
            Err(SealError::WrongKey)
        );
        let mut other = c.clone();
        other.id = "c2".into();
        assert_eq!(key.open(&mut other, &sealed), Err(SealError::WrongKey));
        assert_eq!(key.open(&mut c, "v1.AAAA"), Err(SealError::WrongKey));
    }

    #[test]
    fn debug_output_never_shows_the_secrets() {
        let shown = format!("{:?}", config());
        assert!(!shown.contains("secret"), "{shown}");
        assert!(
            shown.contains("<redacted>") && shown.contains("hooks.example"),
            "{shown}"
        );
    }

    #[test]
    fn a_config_without_secrets_seals_to_nothing() {
        let key = PushKey::generate();
        let mut c = TaskPushNotificationConfig {
            url: "https://hooks.example/a".into(),
            ..Default::default()
        };
        assert_eq!(key.seal(&mut c), "");
        key.open(&mut c, "").unwrap();
    }

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
