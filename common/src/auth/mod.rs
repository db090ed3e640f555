//! Who a request comes from. Two modes:
//!
//! - `none`: a participant names themselves (the `X-Participant-Id` header, a message's
//!   `metadata.participant_id`), as in the original system; for a laptop demo.
//! - `jwt`: every request but the public agent card carries `Authorization: Bearer <JWT>`,
//!   verified here, in the harness (so the same checks hold behind the HTTP API, on a
//!   Function URL and in harness-local): the signature against the identity provider's
//!   JWKS ([`jwks`]) or harness-local's own key ([`local_key`]), the issuer, the audience,
//!   `exp` and `nbf` with [`LEEWAY`]. The participant is one of its claims.
//!
//! What a verified identity may then do is decided by the operations (see
//! `ops::Caller`); this module only says who it is.

pub mod jwks;
pub mod local_key;
pub mod ring_crypto;

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

/// Clock skew allowed on `exp` and `nbf`.
pub const LEEWAY: Duration = Duration::from_secs(30);
/// The claim naming the participant unless configured otherwise.
pub const DEFAULT_IDENTITY_CLAIM: &str = "sub";
/// Longest token read; a longer `Authorization` header is refused unread.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// The realm named in challenges.
const REALM: &str = "tiny-harness";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthMode {
    /// Self-asserted identity.
    #[default]
    None,
    /// A verified bearer token.
    Jwt,
}

impl std::str::FromStr for AuthMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(AuthMode::None),
            "jwt" => Ok(AuthMode::Jwt),
            other => Err(format!("unknown auth mode {other:?} (none or jwt)")),
        }
    }
}

/// Where the keys that sign tokens come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// An identity provider's JWKS URL.
    Jwks(String),
    /// harness-local's own key (`harness-local token`).
    Local(local_key::PublicKey),
}

/// What `jwt` mode checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtSettings {
    pub keys: KeySource,
    /// The `iss` a token must carry.
    pub issuer: String,
    /// The `aud` a token must include (or, with no `aud`, its `client_id`, as Cognito
    /// access tokens carry it and API Gateway's JWT authorizer accepts it).
    pub audience: String,
    /// The claim naming the participant.
    pub identity_claim: String,
    /// An OpenID Connect discovery URL the card advertises instead of a bare bearer
    /// scheme, so clients can find the provider.
    pub openid_configuration_url: Option<String>,
}

/// The identity mode and its settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Auth {
    #[default]
    None,
    Jwt(JwtSettings),
}

/// The settings as given (flags, or the environment), before the keys are found.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub mode: AuthMode,
    pub jwks_url: Option<String>,
    pub issuer: Option<String>,
    pub audience: Option<String>,
    pub identity_claim: Option<String>,
    pub oidc_discovery_url: Option<String>,
}

impl Options {
    /// What these options describe. Without a JWKS URL, tokens are verified with the key
    /// of the state directory `local` (harness-local, created if missing); where there is
    /// none (Lambda) the URL is required. With a JWKS URL, issuer and audience are too:
    /// an identity provider signs tokens for other services as well.
    pub fn resolve(self, local: Option<&std::path::Path>) -> Result<Auth, String> {
        if self.mode == AuthMode::None {
            return Ok(Auth::None);
        }
        let required = |v: Option<String>, what: &str| {
            v.ok_or_else(|| format!("jwt mode with a JWKS URL needs {what}"))
        };
        let (keys, issuer, audience) = match (self.jwks_url, local) {
            (Some(url), _) => (
                KeySource::Jwks(url),
                required(self.issuer, "the issuer (--jwt-issuer, HARNESS_JWT_ISSUER)")?,
                required(
                    self.audience,
                    "the audience (--jwt-audience, HARNESS_JWT_AUDIENCE)",
                )?,
            ),
            (None, Some(dir)) => (
                KeySource::Local(
                    local_key::LocalKey::load_or_create(dir)
                        .map_err(|e| e.to_string())?
                        .public()
                        .clone(),
                ),
                self.issuer
                    .unwrap_or_else(|| local_key::LOCAL_ISSUER.into()),
                self.audience
                    .unwrap_or_else(|| local_key::LOCAL_ISSUER.into()),
            ),
            (None, None) => {
                return Err("jwt mode needs the identity provider's JWKS URL \
                     (HARNESS_JWKS_URL)"
                    .into())
            }
        };
        Ok(Auth::Jwt(JwtSettings {
            keys,
            issuer,
            audience,
            identity_claim: self
                .identity_claim
                .unwrap_or_else(|| DEFAULT_IDENTITY_CLAIM.into()),
            openid_configuration_url: self.oidc_discovery_url,
        }))
    }
}

/// Why a request is not authenticated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("a bearer token is required (Authorization: Bearer <token>)")]
    Missing,
    #[error("{0}")]
    Malformed(&'static str),
    #[error("{0}")]
    Invalid(&'static str),
    #[error("the identity provider's keys cannot be fetched; try again later")]
    Unavailable,
}

impl AuthError {
    /// The `WWW-Authenticate` challenge (RFC 6750 §3): the error code only when
    /// credentials were sent.
    pub fn challenge(&self) -> Option<String> {
        let (code, description) = match self {
            AuthError::Missing => return Some(format!("Bearer realm=\"{REALM}\"")),
            AuthError::Malformed(d) => ("invalid_request", *d),
            AuthError::Invalid(d) => ("invalid_token", *d),
            AuthError::Unavailable => return None,
        };
        Some(format!(
            "Bearer realm=\"{REALM}\", error=\"{code}\", error_description=\"{description}\""
        ))
    }
}

/// Verifies the bearer tokens of `jwt` mode.
pub struct Verifier {
    settings: JwtSettings,
    keys: Keys,
}

enum Keys {
    Remote(jwks::RemoteKeys),
    Local(jwks::Key),
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    pub fn new(settings: JwtSettings) -> Result<Self, String> {
        ring_crypto::install();
        let keys = match &settings.keys {
            KeySource::Jwks(url) => {
                check_jwks_url(url)?;
                Keys::Remote(jwks::RemoteKeys::new(url.clone(), jwks::Policy::default()))
            }
            KeySource::Local(public) => Keys::Local(jwks::Key::new(
                Some(public.kid.clone()),
                vec![Algorithm::ES256],
                public
                    .decoding_key()
                    .map_err(|e| format!("the local token key: {e}"))?,
            )),
        };
        if settings.issuer.is_empty() || settings.audience.is_empty() {
            return Err("jwt mode needs the issuer and the audience tokens must carry".into());
        }
        crate::ext::participant::parse_id(&settings.identity_claim)
            .map_err(|_| "the identity claim must be a claim name")?;
        Ok(Verifier { settings, keys })
    }

    pub fn settings(&self) -> &JwtSettings {
        &self.settings
    }

    /// The participant an `Authorization` header's token names, once it is verified, and
    /// its expiry.
    pub async fn verify(&self, authorization: Option<&[u8]>) -> Result<Verified, AuthError> {
        let token = bearer(authorization)?;
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| AuthError::Invalid("the token is not a JWT"))?;
        // Asymmetric algorithms only (jsonwebtoken has no `none`), so a public key can
        // never serve as an HMAC secret.
        if matches!(
            header.alg,
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
        ) {
            return Err(AuthError::Invalid("the token's algorithm is not accepted"));
        }
        let key = match &self.keys {
            Keys::Remote(remote) => remote.key(header.kid.as_deref(), header.alg).await,
            Keys::Local(key) => {
                let kid_matches = header.kid.is_none() || header.kid == key.kid;
                if kid_matches && key.verifies(header.alg) {
                    Ok(key.clone())
                } else {
                    Err(jwks::KeyError::Unknown)
                }
            }
        }
        .map_err(|e| match e {
            jwks::KeyError::Unknown => AuthError::Invalid("the token's signing key is unknown"),
            jwks::KeyError::Unavailable => AuthError::Unavailable,
        })?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_required_spec_claims(&["exp", "iss"]);
        // Checked below, where `client_id` may stand in for a missing `aud`.
        validation.validate_aud = false;
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|e| AuthError::Invalid(why(e.kind())))?
            .claims;
        // jsonwebtoken takes a list for `iss` when one of it matches; RFC 7519 has one.
        if claims.get("iss").and_then(Value::as_str) != Some(self.settings.issuer.as_str()) {
            return Err(AuthError::Invalid(why(
                &jsonwebtoken::errors::ErrorKind::InvalidIssuer,
            )));
        }
        if !self.for_us(&claims) {
            return Err(AuthError::Invalid("the token is not for this audience"));
        }
        let participant = claims
            .get(&self.settings.identity_claim)
            .and_then(Value::as_str)
            .filter(|id| crate::ext::participant::valid_id(id))
            .map(str::to_owned)
            .ok_or(AuthError::Invalid(NOT_AN_ID))?;
        // A number (jsonwebtoken checked it, and that it is not past): whole seconds.
        let exp = (claims.get("exp").and_then(Value::as_f64)).map_or(0, |exp| exp.max(0.0) as u64);
        Ok(Verified { participant, exp })
    }

    fn for_us(&self, claims: &Map<String, Value>) -> bool {
        let ours = |v: &Value| v.as_str() == Some(self.settings.audience.as_str());
        match claims.get("aud") {
            Some(Value::Array(auds)) => auds.iter().any(ours),
            Some(aud) => ours(aud),
            None => claims.get("client_id").is_some_and(ours),
        }
    }
}

/// What a verified token says: who it names, and when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub participant: String,
    /// Its `exp`, in seconds since the epoch.
    pub exp: u64,
}

impl Verified {
    /// When the token stops being accepted, as an instant of this process's clock: the
    /// second after its `exp` plus [`LEEWAY`] (the verifier counts whole seconds); None when
    /// that is beyond what the clock can count.
    pub fn accepted_until(&self) -> Option<std::time::Instant> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let end = Duration::from_secs(self.exp.saturating_add(1)).saturating_add(LEEWAY);
        std::time::Instant::now().checked_add(end.saturating_sub(now))
    }
}

/// Why a verified token whose identity claim is not a participant id
/// (`ext::participant::ID_RULE`) is refused.
pub const NOT_AN_ID: &str = "the token's identity claim is not a participant id";

/// The token of a `Bearer` authorization.
fn bearer(authorization: Option<&[u8]>) -> Result<&str, AuthError> {
    let value = authorization.ok_or(AuthError::Missing)?;
    if value.len() > MAX_TOKEN_BYTES {
        return Err(AuthError::Malformed("the Authorization header is too long"));
    }
    let value = std::str::from_utf8(value)
        .map_err(|_| AuthError::Malformed("the Authorization header is not text"))?;
    let value = value.trim();
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Malformed(
            "the Authorization header must be Bearer <token>",
        ));
    }
    match token.trim() {
        "" => Err(AuthError::Missing),
        token => Ok(token),
    }
}

fn why(kind: &jsonwebtoken::errors::ErrorKind) -> &'static str {
    use jsonwebtoken::errors::ErrorKind as K;
    match kind {
        K::ExpiredSignature => "the token has expired",
        K::ImmatureSignature => "the token is not valid yet",
        K::InvalidIssuer => "the token is from another issuer",
        K::InvalidSignature => "the token's signature does not verify",
        K::MissingRequiredClaim(_) => "the token lacks a required claim (exp, iss)",
        K::InvalidAlgorithm => "the token's algorithm does not match its key",
        _ => "the token cannot be read",
    }
}

/// A JWKS URL is HTTPS, or plain HTTP on a loopback address (a test or a sidecar): keys
/// fetched in the clear from elsewhere could be anyone's.
fn check_jwks_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("JWKS URL {url:?}: {e}"))?;
    let host = parsed.host_str().unwrap_or("");
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(format!(
            "JWKS URL {url:?}: use https (plain http only on a loopback address)"
        )),
    }
}

/// The verifier `auth` needs, if any.
pub fn verifier(auth: &Auth) -> Result<Option<Arc<Verifier>>, String> {
    match auth {
        Auth::None => Ok(None),
        Auth::Jwt(settings) => Ok(Some(Arc::new(Verifier::new(settings.clone())?))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream ends when its token would no longer open one: the second after its
    /// `exp` plus the leeway.
    #[test]
    fn a_token_is_accepted_until_the_second_after_its_exp_and_leeway() {
        let now = jsonwebtoken::get_current_timestamp();
        let until = |exp| {
            Verified {
                participant: "alice".into(),
                exp,
            }
            .accepted_until()
        };
        let left =
            (until(now).expect("an instant")).saturating_duration_since(std::time::Instant::now());
        let second = Duration::from_secs(1);
        assert!(
            left > LEEWAY - second && left <= LEEWAY + second,
            "{left:?}"
        );
        assert!(until(0).is_some_and(|t| t <= std::time::Instant::now()));
        assert_eq!(until(u64::MAX), None, "beyond the clock");
    }

    #[test]
    fn only_bearer_authorizations_of_a_bounded_size_are_read() {
        assert_eq!(bearer(None), Err(AuthError::Missing));
        assert_eq!(bearer(Some(b"Bearer abc")), Ok("abc"));
        assert_eq!(bearer(Some(b"bearer  abc ")), Ok("abc"));
        assert_eq!(bearer(Some(b"Bearer ")), Err(AuthError::Missing));
        assert!(matches!(
            bearer(Some(b"Basic YTpi")),
            Err(AuthError::Malformed(_))
        ));
        let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES));
        assert!(matches!(
            bearer(Some(long.as_bytes())),
            Err(AuthError::Malformed(_))
        ));
    }

    #[test]
    fn challenges_name_the_error_only_when_a_token_was_sent() {
        assert_eq!(
            AuthError::Missing.challenge().unwrap(),
            "Bearer realm=\"tiny-harness\""
        );
        let invalid = AuthError::Invalid("the token has expired")
            .challenge()
            .unwrap();
        assert!(invalid.contains("error=\"invalid_token\""), "{invalid}");
        assert_eq!(AuthError::Unavailable.challenge(), None);
    }

    #[test]
    fn jwt_mode_needs_a_provider_or_a_local_key_and_names_what_is_missing() {
        let jwt = |jwks: Option<&str>, issuer: Option<&str>| Options {
            mode: AuthMode::Jwt,
            jwks_url: jwks.map(Into::into),
            issuer: issuer.map(Into::into),
            audience: Some("aud".into()),
            ..Options::default()
        };
        // A Lambda function has no state directory: the JWKS URL is required.
        let e = jwt(None, None).resolve(None).unwrap_err();
        assert!(e.contains("HARNESS_JWKS_URL"), "{e}");
        let e = jwt(Some("https://idp/jwks"), None)
            .resolve(None)
            .unwrap_err();
        assert!(e.contains("HARNESS_JWT_ISSUER"), "{e}");
        let Auth::Jwt(s) = jwt(Some("https://idp/jwks"), Some("iss"))
            .resolve(None)
            .unwrap()
        else {
            panic!("jwt")
        };
        assert_eq!(
            (s.issuer.as_str(), s.identity_claim.as_str()),
            ("iss", DEFAULT_IDENTITY_CLAIM)
        );
        let none = Options::default().resolve(None).unwrap();
        assert_eq!(none, Auth::None);
        assert_eq!("jwt".parse(), Ok(AuthMode::Jwt));
        assert!("basic".parse::<AuthMode>().is_err());
    }

    #[test]
    fn jwks_urls_are_https_or_loopback_http() {
        assert!(check_jwks_url("https://idp.example/.well-known/jwks.json").is_ok());
        assert!(check_jwks_url("http://127.0.0.1:9000/jwks").is_ok());
        assert!(check_jwks_url("http://localhost/jwks").is_ok());
        assert!(check_jwks_url("http://idp.example/jwks").is_err());
        assert!(check_jwks_url("file:///etc/jwks").is_err());
    }

    use serde_json::json;

    #[tokio::test]
    async fn local_tokens_verify_and_their_claims_are_checked() {
        let tmp = tempfile::tempdir().expect("a temporary directory");
        let dir = tmp.path();
        let key = local_key::LocalKey::load_or_create(dir).unwrap();
        let settings = JwtSettings {
            keys: KeySource::Local(key.public().clone()),
            issuer: "iss".into(),
            audience: "aud".into(),
            identity_claim: "sub".into(),
            openid_configuration_url: None,
        };
        let v = Verifier::new(settings).unwrap();
        let hour = Duration::from_secs(3600);
        let auth = |t: String| format!("Bearer {t}");
        let good = key.mint("alice", "sub", "iss", "aud", hour).unwrap();
        assert_eq!(
            v.verify(Some(auth(good).as_bytes()))
                .await
                .map(|v| v.participant),
            Ok("alice".into())
        );
        for (token, expected) in [
            (
                key.mint("alice", "sub", "other", "aud", hour).unwrap(),
                "the token is from another issuer",
            ),
            (
                key.mint("alice", "sub", "iss", "other", hour).unwrap(),
                "the token is not for this audience",
            ),
            (
                key.mint("a\nb", "sub", "iss", "aud", hour).unwrap(),
                "the token's identity claim is not a participant id",
            ),
            (
                key.mint("alice", "email", "iss", "aud", hour).unwrap(),
                "the token's identity claim is not a participant id",
            ),
        ] {
            assert_eq!(
                v.verify(Some(auth(token).as_bytes())).await,
                Err(AuthError::Invalid(expected))
            );
        }
        let now = jsonwebtoken::get_current_timestamp();
        let claims =
            serde_json::json!({"iss": "iss", "aud": "aud", "sub": "alice", "exp": now + 60});
        // An HMAC token under the right kid (as if signed with the public key): refused
        // before any key is used.
        use base64::Engine;
        let b64 =
            |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let header = serde_json::json!({"alg": "HS256", "typ": "JWT", "kid": key.public().kid});
        let hmac = format!("{}.{}.c2ln", b64(&header), b64(&claims));
        assert_eq!(
            v.verify(Some(auth(hmac).as_bytes())).await,
            Err(AuthError::Invalid("the token's algorithm is not accepted"))
        );
        // CVE-2026-25537: an nbf (or exp) of the wrong type is not skipped.
        for (name, bad) in [
            ("nbf", json!((now + 3600).to_string())),
            ("exp", json!("soon")),
        ] {
            let mut c = claims.clone();
            c[name] = bad;
            let token = key.sign(&c).unwrap();
            assert!(
                v.verify(Some(auth(token).as_bytes())).await.is_err(),
                "{name}"
            );
        }
    }
}
