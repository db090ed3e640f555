//! An identity provider's verification keys, from its JWKS URL: fetched at first use,
//! kept for [`Policy::refresh_after`], fetched again early when a token names a key id the
//! set does not hold (a key rotation), but never more often than once per
//! [`Policy::min_refetch`] whatever tokens arrive, so forged key ids cannot make the
//! harness hammer the provider. While the provider cannot be reached the last keys serve
//! for up to [`Policy::stale_for`]; with none, verification fails closed. An outage is
//! logged when it starts and when it ends, not per request.

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

/// Largest JWKS document read.
pub const MAX_JWKS_BYTES: usize = 256 * 1024;
/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// When the keys are fetched again.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub refresh_after: Duration,
    pub min_refetch: Duration,
    pub stale_for: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            refresh_after: Duration::from_secs(600),
            min_refetch: Duration::from_secs(30),
            stale_for: Duration::from_secs(24 * 3600),
        }
    }
}

/// What an RSA key may verify: PKCS#1 v1.5 and PSS with SHA-256, -384 and -512.
pub const RSA_ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

/// A key a token may be signed with: its id, what it may verify, the key.
#[derive(Clone)]
pub struct Key {
    pub kid: Option<String>,
    algorithms: Vec<Algorithm>,
    pub key: DecodingKey,
}

impl Key {
    pub fn new(kid: Option<String>, algorithms: Vec<Algorithm>, key: DecodingKey) -> Self {
        Key {
            kid,
            algorithms,
            key,
        }
    }

    pub fn verifies(&self, alg: Algorithm) -> bool {
        self.algorithms.contains(&alg)
    }

    /// A published key, if it is an asymmetric signing key this harness verifies with
    /// (symmetric, encryption-only and unknown keys are passed over).
    fn from_jwk(jwk: &Jwk) -> Option<Key> {
        if jwk.common.public_key_use == Some(PublicKeyUse::Encryption) {
            return None;
        }
        let family: &[Algorithm] = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => RSA_ALGORITHMS,
            AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
                EllipticCurve::P256 => &[Algorithm::ES256],
                EllipticCurve::P384 => &[Algorithm::ES384],
                _ => return None,
            },
            AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
                &[Algorithm::EdDSA]
            }
            _ => return None,
        };
        // A key that names its algorithm verifies that one only.
        let algorithms = match jwk.common.key_algorithm {
            Some(named) => {
                let named: Algorithm = named.to_string().parse().ok()?;
                family.contains(&named).then(|| vec![named])?
            }
            None => family.to_vec(),
        };
        Some(Key {
            kid: jwk.common.key_id.clone(),
            algorithms,
            key: DecodingKey::from_jwk(jwk).ok()?,
        })
    }
}

/// Why no key verifies a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the token's key is not one of the identity provider's")]
    Unknown,
    #[error("the identity provider's keys cannot be fetched")]
    Unavailable,
}

#[derive(Default)]
struct State {
    keys: Vec<Key>,
    fetched_at: Option<Instant>,
    attempted_at: Option<Instant>,
    failing: bool,
}

/// The keys at one JWKS URL.
pub struct RemoteKeys {
    url: String,
    policy: Policy,
    /// Built at the first fetch, not at start-up (the trust store takes milliseconds to
    /// load, on every cold start).
    client: std::sync::OnceLock<reqwest::Client>,
    state: std::sync::Mutex<State>,
    /// One fetch at a time; requests arriving meanwhile wait for its result.
    fetching: tokio::sync::Mutex<()>,
}

impl RemoteKeys {
    pub fn new(url: String, policy: Policy) -> Self {
        RemoteKeys {
            url,
            policy,
            client: Default::default(),
            state: Default::default(),
            fetching: Default::default(),
        }
    }

    /// The key that verifies a token with header `kid` and `alg`.
    pub async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Result<Key, KeyError> {
        if let Some(found) = self.cached(kid, alg) {
            return found;
        }
        let _one = self.fetching.lock().await;
        // Another request may have fetched while this one waited.
        if let Some(found) = self.cached(kid, alg) {
            return found;
        }
        let fetched = self.fetch().await;
        let mut state = self.lock();
        let now = Instant::now();
        state.attempted_at = Some(now);
        match fetched {
            Ok(keys) => {
                if state.failing {
                    tracing::info!(url = %self.url, "the JWKS can be fetched again");
                }
                state.failing = false;
                state.keys = keys;
                state.fetched_at = Some(now);
            }
            Err(e) => {
                if !state.failing {
                    tracing::warn!(url = %self.url, error = %e, "cannot fetch the JWKS; \
                        verifying with the last keys fetched, if any, until it can be");
                }
                state.failing = true;
            }
        }
        self.lookup(&state, kid, alg, now)
    }

    /// The answer the cache can give without fetching: always when the keys are fresh and
    /// hold the key, and otherwise when a fetch was attempted too recently to try again.
    fn cached(&self, kid: Option<&str>, alg: Algorithm) -> Option<Result<Key, KeyError>> {
        let state = self.lock();
        let now = Instant::now();
        let fresh = state
            .fetched_at
            .is_some_and(|t| now.duration_since(t) < self.policy.refresh_after);
        let found = self.lookup(&state, kid, alg, now);
        if fresh && found.is_ok() {
            return Some(found);
        }
        let recent = state
            .attempted_at
            .is_some_and(|t| now.duration_since(t) < self.policy.min_refetch);
        recent.then_some(found)
    }

    fn lookup(
        &self,
        state: &State,
        kid: Option<&str>,
        alg: Algorithm,
        now: Instant,
    ) -> Result<Key, KeyError> {
        let usable = state
            .fetched_at
            .is_some_and(|t| now.duration_since(t) < self.policy.stale_for);
        if !usable {
            return Err(KeyError::Unavailable);
        }
        let mut candidates = state
            .keys
            .iter()
            .filter(|k| k.verifies(alg) && (kid.is_none() || k.kid.as_deref() == kid));
        match (candidates.next(), candidates.next(), kid) {
            (Some(k), _, Some(_)) | (Some(k), None, None) => Ok(k.clone()),
            // No key id and several keys could be meant: none is chosen.
            _ => Err(KeyError::Unknown),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn fetch(&self) -> Result<Vec<Key>, String> {
        let client = match self.client.get() {
            Some(client) => client,
            None => {
                let client = crate::https::client_builder()
                    .timeout(FETCH_TIMEOUT)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| format!("cannot build the JWKS client: {e}"))?;
                self.client.get_or_init(|| client)
            }
        };
        let mut resp = client
            .get(&self.url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| e.without_url().to_string())?;
        if !resp.status().is_success() {
            return Err(format!("HTTP {}", resp.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| e.to_string())? {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!("the JWKS is larger than {MAX_JWKS_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        parse(&body)
    }
}

/// The usable keys of a JWKS document; keys it cannot use are passed over, so one odd key
/// does not hide the others.
pub fn parse(body: &[u8]) -> Result<Vec<Key>, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let keys = doc
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("not a JWKS (no \"keys\" array)")?;
    Ok(keys
        .iter()
        .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
        .filter_map(|jwk| Key::from_jwk(&jwk))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    fn ec_jwk(kid: &str) -> Value {
        // The P-256 generator point: a valid public key.
        json!({"kty": "EC", "crv": "P-256", "kid": kid,
               "x": "axfR8uEsQkf4vOblY6RA8ncDfYEt6zOg9KE5RdiYwpY",
               "y": "T-NC4v4af5uO5-tKfA-eFivOM1drMV7Oy7ZAaDe_UfU"})
    }

    #[test]
    fn symmetric_encryption_and_unknown_keys_are_passed_over() {
        let body = json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {"kty": "EC", "crv": "P-256", "use": "enc", "kid": "enc",
             "x": "axfR8uEsQkf4vOblY6RA8ncDfYEt6zOg9KE5RdiYwpY",
             "y": "T-NC4v4af5uO5-tKfA-eFivOM1drMV7Oy7ZAaDe_UfU"},
            {"kty": "weird", "kid": "w"},
            ec_jwk("good"),
        ]});
        let keys = parse(body.to_string().as_bytes()).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("good"));
        assert!(keys[0].verifies(Algorithm::ES256) && !keys[0].verifies(Algorithm::HS256));
        assert!(parse(b"{}").is_err());
    }

    async fn jwks_server(keys: Value) -> MockServer {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/jwks"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"keys": keys})))
            .mount(&server)
            .await;
        server
    }

    fn quick() -> Policy {
        Policy {
            refresh_after: Duration::from_secs(600),
            min_refetch: Duration::from_millis(200),
            stale_for: Duration::from_secs(600),
        }
    }

    #[tokio::test]
    async fn an_unknown_kid_fetches_again_but_not_more_than_once_per_interval() {
        let server = jwks_server(json!([ec_jwk("k1")])).await;
        let keys = RemoteKeys::new(format!("{}/jwks", server.uri()), quick());
        assert!(keys.key(Some("k1"), Algorithm::ES256).await.is_ok());
        // The provider rotates to k2.
        server.reset().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"keys": [ec_jwk("k2")]})))
            .mount(&server)
            .await;
        // Too soon after the last fetch: not fetched again, however many ask.
        for _ in 0..20 {
            assert_eq!(
                keys.key(Some("k2"), Algorithm::ES256).await.err(),
                Some(KeyError::Unknown)
            );
        }
        assert_eq!(server.received_requests().await.unwrap().len(), 0);
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(keys.key(Some("k2"), Algorithm::ES256).await.is_ok());
        assert_eq!(server.received_requests().await.unwrap().len(), 1);
        // The wrong algorithm for the key is no key at all.
        assert_eq!(
            keys.key(Some("k2"), Algorithm::RS256).await.err(),
            Some(KeyError::Unknown)
        );
    }

    #[tokio::test]
    async fn a_provider_that_is_down_fails_closed_until_it_is_back() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(503))
            .mount(&server)
            .await;
        let keys = RemoteKeys::new(format!("{}/jwks", server.uri()), quick());
        assert_eq!(
            keys.key(Some("k1"), Algorithm::ES256).await.err(),
            Some(KeyError::Unavailable)
        );
        server.reset().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"keys": [ec_jwk("k1")]})))
            .mount(&server)
            .await;
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(keys.key(Some("k1"), Algorithm::ES256).await.is_ok());
    }

    #[tokio::test]
    async fn without_a_kid_only_a_single_candidate_key_is_used() {
        let server = jwks_server(json!([ec_jwk("a"), ec_jwk("b")])).await;
        let keys = RemoteKeys::new(format!("{}/jwks", server.uri()), quick());
        assert_eq!(
            keys.key(None, Algorithm::ES256).await.err(),
            Some(KeyError::Unknown)
        );
        let server = jwks_server(json!([ec_jwk("a")])).await;
        let keys = RemoteKeys::new(format!("{}/jwks", server.uri()), quick());
        assert!(keys.key(None, Algorithm::ES256).await.is_ok());
    }
}
