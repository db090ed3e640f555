//! Webhook secrets at rest: a config's `token` and `authentication.credentials` are
//! sealed with AES-256-GCM under the deployment's push key before they are stored, bound
//! to their task and config ids (a sealed value copied onto another config does not
//! open). The key never appears in logs or `Debug` output.

use aes_gcm::aead::{Aead, AeadCore, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::a2a::{AuthenticationInfo, TaskPushNotificationConfig};
use crate::sealing::{PushKey, SealError};

/// Marks the sealing format, so a later one can be told apart.
const VERSION: &str = "v1.";
const NONCE_LEN: usize = 12;

impl PushKey {
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
}
