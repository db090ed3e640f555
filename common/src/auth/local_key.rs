//! The signing key of a harness on a laptop: `harness-local token <participant>` mints
//! short-lived tokens with it, and a harness on the same state directory in `jwt` mode
//! with no JWKS URL accepts them, so a developer tries verified identity without an
//! identity provider. An ES256 (P-256) key in PKCS#8, kept in the state directory readable
//! by its owner only, created on first use.

use std::path::Path;
use std::time::Duration;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::secret_file::write_once;

/// The key's file in the state directory.
pub const KEY_FILE: &str = "auth.key";
/// The issuer and audience of local tokens unless configured otherwise.
pub const LOCAL_ISSUER: &str = "harness-local";
/// How long a minted token lives unless asked otherwise.
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);
/// The longest lifetime a minted token may have.
pub const MAX_LIFETIME: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, thiserror::Error)]
pub enum LocalKeyError {
    #[error("the token key file {path}: {error}")]
    File { path: String, error: String },
    #[error("the token key file {path} is not a P-256 key this harness wrote")]
    Corrupt { path: String },
    #[error(
        "the token key file {path} may be read by others (mode {mode:o}); \
         `chmod 600 {path}` and mint new tokens"
    )]
    Exposed { path: String, mode: u32 },
    #[error("a token lives at most {} seconds", MAX_LIFETIME.as_secs())]
    Lifetime,
    #[error("cannot sign the token: {0}")]
    Sign(String),
}

/// The private key (never printed) and its public half.
pub struct LocalKey {
    pkcs8: Vec<u8>,
    public: PublicKey,
}

impl std::fmt::Debug for LocalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

/// What verifies local tokens: the P-256 point and its key id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub kid: String,
    x: String,
    y: String,
}

impl PublicKey {
    pub fn decoding_key(&self) -> Result<DecodingKey, jsonwebtoken::errors::Error> {
        DecodingKey::from_ec_components(&self.x, &self.y)
    }

    /// The key as a JWK, as an identity provider would publish it.
    pub fn jwk(&self) -> Value {
        json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig",
               "kid": self.kid, "x": self.x, "y": self.y})
    }
}

impl LocalKey {
    /// The key in `dir`, created (mode 0600) if there is none. Several processes may start
    /// at once: the file appears whole or not at all.
    pub fn load_or_create(dir: &Path) -> Result<Self, LocalKeyError> {
        let path = dir.join(KEY_FILE);
        let file_error = file_error(&path);
        match std::fs::symlink_metadata(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                crate::secret_file::private_dir(dir).map_err(file_error)?;
                let pkcs8 = EcdsaKeyPair::generate_pkcs8(
                    &ECDSA_P256_SHA256_FIXED_SIGNING,
                    &SystemRandom::new(),
                )
                .map_err(|_| LocalKeyError::Sign("cannot generate a key".into()))?;
                write_once(&path, &format!("{}\n", STANDARD.encode(pkcs8.as_ref())))
                    .map_err(file_error)?;
            }
            Err(e) => return Err(file_error(e)),
        }
        let text = read_private(&path)?;
        Self::from_file(&path, &text)
    }

    fn from_file(path: &Path, text: &str) -> Result<Self, LocalKeyError> {
        let corrupt = || LocalKeyError::Corrupt {
            path: path.display().to_string(),
        };
        let pkcs8 = STANDARD.decode(text.trim()).map_err(|_| corrupt())?;
        let pair = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            &pkcs8,
            &SystemRandom::new(),
        )
        .map_err(|_| corrupt())?;
        // An uncompressed point: 0x04, then x and y, 32 bytes each.
        let point = pair.public_key().as_ref();
        if point.len() != 65 || point[0] != 4 {
            return Err(corrupt());
        }
        let kid = URL_SAFE_NO_PAD.encode(&Sha256::digest(point)[..12]);
        let public = PublicKey {
            kid,
            x: URL_SAFE_NO_PAD.encode(&point[1..33]),
            y: URL_SAFE_NO_PAD.encode(&point[33..]),
        };
        Ok(LocalKey { pkcs8, public })
    }

    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// A token for `participant` in `claim`, from `issuer` to `audience`, valid from now
    /// for `lifetime`.
    pub fn mint(
        &self,
        participant: &str,
        claim: &str,
        issuer: &str,
        audience: &str,
        lifetime: Duration,
    ) -> Result<String, LocalKeyError> {
        if lifetime > MAX_LIFETIME || lifetime.is_zero() {
            return Err(LocalKeyError::Lifetime);
        }
        let now = jsonwebtoken::get_current_timestamp();
        let mut claims = json!({
            "iss": issuer,
            "aud": audience,
            "iat": now,
            "nbf": now,
            "exp": now + lifetime.as_secs(),
        });
        claims[claim] = Value::String(participant.to_owned());
        self.sign(&claims)
    }

    /// `claims` as a token signed with this key (ES256, under its key id).
    pub fn sign(&self, claims: &Value) -> Result<String, LocalKeyError> {
        super::ring_crypto::install();
        let header = Header {
            kid: Some(self.public.kid.clone()),
            ..Header::new(Algorithm::ES256)
        };
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(&self.pkcs8))
            .map_err(|e| LocalKeyError::Sign(e.to_string()))
    }
}

fn file_error(path: &Path) -> impl Fn(std::io::Error) -> LocalKeyError + Copy + '_ {
    move |e| LocalKeyError::File {
        path: path.display().to_string(),
        error: e.to_string(),
    }
}

/// The key file's text, if it is a regular file (not a link) only its owner may read; the
/// mode is checked on the file opened, so it cannot be swapped in between.
fn read_private(path: &Path) -> Result<String, LocalKeyError> {
    let file_error = file_error(path);
    let not_a_file = || LocalKeyError::File {
        path: path.display().to_string(),
        error: "not a regular file".into(),
    };
    let link = std::fs::symlink_metadata(path).map_err(file_error)?;
    if !link.file_type().is_file() {
        return Err(not_a_file());
    }
    let mut file = std::fs::File::open(path).map_err(file_error)?;
    let meta = file.metadata().map_err(file_error)?;
    if !meta.is_file() {
        return Err(not_a_file());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(LocalKeyError::Exposed {
                path: path.display().to_string(),
                mode,
            });
        }
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut file, &mut text).map_err(file_error)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("local-key-")
            .tempdir()
            .unwrap()
    }

    #[test]
    fn the_key_is_created_once_private_to_its_owner_and_signs_tokens_it_verifies() {
        let tmp = temp_dir();
        let dir = tmp.path();
        let first = LocalKey::load_or_create(dir).unwrap();
        let second = LocalKey::load_or_create(dir).unwrap();
        assert_eq!(first.public(), second.public());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(!format!("{first:?}").contains(&STANDARD.encode(&first.pkcs8)));
        let token = first
            .mint("alice", "sub", LOCAL_ISSUER, LOCAL_ISSUER, DEFAULT_LIFETIME)
            .unwrap();
        super::super::ring_crypto::install();
        let mut validation = jsonwebtoken::Validation::new(Algorithm::ES256);
        validation.set_audience(&[LOCAL_ISSUER]);
        validation.set_issuer(&[LOCAL_ISSUER]);
        let data = jsonwebtoken::decode::<Value>(
            &token,
            &second.public().decoding_key().unwrap(),
            &validation,
        )
        .unwrap();
        assert_eq!(data.claims["sub"], "alice");
        assert_eq!(
            data.header.kid.as_deref(),
            Some(first.public().kid.as_str())
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_key_file_that_is_a_link_is_refused() {
        let tmp = temp_dir();
        let dir = tmp.path();
        let tmp_elsewhere = temp_dir();
        let elsewhere = tmp_elsewhere.path();
        let _ = LocalKey::load_or_create(elsewhere).unwrap();
        std::os::unix::fs::symlink(elsewhere.join(KEY_FILE), dir.join(KEY_FILE)).unwrap();
        let e = LocalKey::load_or_create(dir).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn a_key_others_may_read_is_refused_and_lifetimes_are_bounded() {
        let tmp = temp_dir();
        let dir = tmp.path();
        let key = LocalKey::load_or_create(dir).unwrap();
        assert!(matches!(
            key.mint("a", "sub", "i", "a", MAX_LIFETIME + Duration::from_secs(1)),
            Err(LocalKeyError::Lifetime)
        ));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let path = dir.join(KEY_FILE);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            assert!(matches!(
                LocalKey::load_or_create(dir),
                Err(LocalKeyError::Exposed { .. })
            ));
        }
    }
}
