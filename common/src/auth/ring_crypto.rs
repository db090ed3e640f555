//! jsonwebtoken's cryptography on ring, the one crypto stack every binary already links
//! (rustls runs on it). jsonwebtoken's own providers are aws-lc (its C library was a tenth
//! of each Lambda function) or RustCrypto (rsa, p256, p384 and ed25519: about half a
//! megabyte more); this one only maps algorithms and key encodings onto ring.
//!
//! Verifies RS256/384/512 (PKCS#1 v1.5), PS256/384/512, ES256/384 and EdDSA (Ed25519);
//! signs ES256 (harness-local's key) and the RSA algorithms. HMAC is neither: the harness
//! accepts asymmetric tokens only. [`install`] makes it jsonwebtoken's provider.

use jsonwebtoken::crypto::{CryptoProvider, JwkUtils, JwtSigner, JwtVerifier};
use jsonwebtoken::errors::{Error, ErrorKind};
use jsonwebtoken::jwk::{EllipticCurve, ThumbprintHash};
use jsonwebtoken::signature::{self, Signer, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::rand::SystemRandom;
use ring::signature::{self as sig, KeyPair};

/// Makes this jsonwebtoken's provider for the process (once; later calls do nothing).
pub fn install() {
    static PROVIDER: CryptoProvider = CryptoProvider {
        signer_factory: new_signer,
        verifier_factory: new_verifier,
        jwk_utils: JwkUtils {
            extract_rsa_public_key_components: |_| {
                Err(ErrorKind::InvalidRsaKey("not supported by this provider".into()).into())
            },
            extract_ec_public_key_coordinates: ec_coordinates,
            compute_digest: digest,
        },
    };
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Fails only if a provider was installed already, which then serves.
        let _ = PROVIDER.install_default();
    });
}

fn family(alg: Algorithm) -> AlgorithmFamily {
    match alg {
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => AlgorithmFamily::Hmac,
        Algorithm::ES256 | Algorithm::ES384 => AlgorithmFamily::Ec,
        Algorithm::EdDSA => AlgorithmFamily::Ed,
        _ => AlgorithmFamily::Rsa,
    }
}

/// ring's parameters for verifying `alg` with an RSA key.
fn rsa_verification(alg: Algorithm) -> Option<&'static sig::RsaParameters> {
    Some(match alg {
        Algorithm::RS256 => &sig::RSA_PKCS1_2048_8192_SHA256,
        Algorithm::RS384 => &sig::RSA_PKCS1_2048_8192_SHA384,
        Algorithm::RS512 => &sig::RSA_PKCS1_2048_8192_SHA512,
        Algorithm::PS256 => &sig::RSA_PSS_2048_8192_SHA256,
        Algorithm::PS384 => &sig::RSA_PSS_2048_8192_SHA384,
        Algorithm::PS512 => &sig::RSA_PSS_2048_8192_SHA512,
        _ => return None,
    })
}

/// ring's algorithm for verifying `alg` with a key in bytes (a DER RSA key, an
/// uncompressed EC point, an Ed25519 key).
fn verification(alg: Algorithm) -> Option<&'static dyn sig::VerificationAlgorithm> {
    match alg {
        Algorithm::ES256 => Some(&sig::ECDSA_P256_SHA256_FIXED),
        Algorithm::ES384 => Some(&sig::ECDSA_P384_SHA384_FIXED),
        Algorithm::EdDSA => Some(&sig::ED25519),
        other => rsa_verification(other).map(|p| p as &'static dyn sig::VerificationAlgorithm),
    }
}

struct RingVerifier {
    alg: Algorithm,
    key: DecodingKey,
}

impl Verifier<Vec<u8>> for RingVerifier {
    fn verify(&self, msg: &[u8], signature: &Vec<u8>) -> Result<(), signature::Error> {
        let verified = match self.key.kind() {
            DecodingKeyKind::RsaModulusExponent { n, e } => match rsa_verification(self.alg) {
                Some(params) => sig::RsaPublicKeyComponents { n, e }.verify(params, msg, signature),
                None => Err(ring::error::Unspecified),
            },
            DecodingKeyKind::SecretOrDer(bytes) => match verification(self.alg) {
                Some(alg) => sig::UnparsedPublicKey::new(alg, bytes).verify(msg, signature),
                None => Err(ring::error::Unspecified),
            },
        };
        verified.map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for RingVerifier {
    fn algorithm(&self) -> Algorithm {
        self.alg
    }
}

/// A key serves its own family's algorithms only, and never HMAC: no algorithm
/// confusion, whatever a token's header says.
fn check_family(alg: Algorithm, key: AlgorithmFamily) -> Result<(), Error> {
    if family(alg) == AlgorithmFamily::Hmac || key != family(alg) {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    Ok(())
}

fn new_verifier(alg: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>, Error> {
    check_family(*alg, key.family())?;
    Ok(Box::new(RingVerifier {
        alg: *alg,
        key: key.clone(),
    }))
}

struct RingSigner {
    alg: Algorithm,
    key: EncodingKey,
}

impl Signer<Vec<u8>> for RingSigner {
    fn try_sign(&self, msg: &[u8]) -> Result<Vec<u8>, signature::Error> {
        fn fail<E>(_: E) -> signature::Error {
            signature::Error::new()
        }
        let rng = SystemRandom::new();
        let der = self.key.inner();
        let ecdsa = |alg| {
            let pair = sig::EcdsaKeyPair::from_pkcs8(alg, der, &rng).map_err(fail)?;
            let signed = pair.sign(&rng, msg).map_err(fail)?;
            Ok(signed.as_ref().to_vec())
        };
        let rsa = |padding: &'static dyn sig::RsaEncoding| {
            let pair = sig::RsaKeyPair::from_der(der).map_err(fail)?;
            let mut out = vec![0; pair.public().modulus_len()];
            pair.sign(padding, &rng, msg, &mut out).map_err(fail)?;
            Ok(out)
        };
        match self.alg {
            Algorithm::ES256 => ecdsa(&sig::ECDSA_P256_SHA256_FIXED_SIGNING),
            Algorithm::ES384 => ecdsa(&sig::ECDSA_P384_SHA384_FIXED_SIGNING),
            Algorithm::RS256 => rsa(&sig::RSA_PKCS1_SHA256),
            Algorithm::RS384 => rsa(&sig::RSA_PKCS1_SHA384),
            Algorithm::RS512 => rsa(&sig::RSA_PKCS1_SHA512),
            Algorithm::PS256 => rsa(&sig::RSA_PSS_SHA256),
            Algorithm::PS384 => rsa(&sig::RSA_PSS_SHA384),
            Algorithm::PS512 => rsa(&sig::RSA_PSS_SHA512),
            Algorithm::EdDSA => {
                let pair = sig::Ed25519KeyPair::from_pkcs8_maybe_unchecked(der).map_err(fail)?;
                Ok(pair.sign(msg).as_ref().to_vec())
            }
            _ => Err(signature::Error::new()),
        }
    }
}

impl JwtSigner for RingSigner {
    fn algorithm(&self) -> Algorithm {
        self.alg
    }
}

fn new_signer(alg: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>, Error> {
    check_family(*alg, key.family())?;
    Ok(Box::new(RingSigner {
        alg: *alg,
        key: key.clone(),
    }))
}

fn ec_coordinates(der: &[u8], alg: Algorithm) -> Result<(EllipticCurve, Vec<u8>, Vec<u8>), Error> {
    let (signing, curve, len): (_, _, usize) = match alg {
        Algorithm::ES256 => (
            &sig::ECDSA_P256_SHA256_FIXED_SIGNING,
            EllipticCurve::P256,
            32,
        ),
        Algorithm::ES384 => (
            &sig::ECDSA_P384_SHA384_FIXED_SIGNING,
            EllipticCurve::P384,
            48,
        ),
        _ => return Err(ErrorKind::InvalidEcdsaKey.into()),
    };
    let pair = sig::EcdsaKeyPair::from_pkcs8(signing, der, &SystemRandom::new())
        .map_err(|_| Error::from(ErrorKind::InvalidEcdsaKey))?;
    match pair.public_key().as_ref() {
        [4, xy @ ..] if xy.len() == 2 * len => Ok((curve, xy[..len].to_vec(), xy[len..].to_vec())),
        _ => Err(ErrorKind::InvalidEcdsaKey.into()),
    }
}

fn digest(data: &[u8], hash: ThumbprintHash) -> Vec<u8> {
    let alg = match hash {
        ThumbprintHash::SHA256 => &ring::digest::SHA256,
        ThumbprintHash::SHA384 => &ring::digest::SHA384,
        ThumbprintHash::SHA512 => &ring::digest::SHA512,
    };
    ring::digest::digest(alg, data).as_ref().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{decode, encode, Header, Validation};
    use serde_json::{json, Value};

    const RSA_PEM: &str = include_str!("../../../tests/fixtures/jwt/rsa-test-idp.pem");
    const RSA_JWK: &str = include_str!("../../../tests/fixtures/jwt/rsa-test-idp.jwk.json");

    fn round_trip(alg: Algorithm, signing: &EncodingKey, verifying: &DecodingKey) -> bool {
        let claims = json!({"sub": "alice", "exp": jsonwebtoken::get_current_timestamp() + 60});
        let token = encode(&Header::new(alg), &claims, signing).expect("signs");
        let mut validation = Validation::new(alg);
        validation.validate_aud = false;
        decode::<Value>(&token, verifying, &validation).is_ok()
    }

    fn pkcs8(alg: &'static sig::EcdsaSigningAlgorithm) -> Vec<u8> {
        let rng = SystemRandom::new();
        sig::EcdsaKeyPair::generate_pkcs8(alg, &rng)
            .expect("a key")
            .as_ref()
            .to_vec()
    }

    #[test]
    fn every_asymmetric_algorithm_signs_and_verifies_and_keys_serve_their_family_only() {
        install();
        let rsa = EncodingKey::from_rsa_pem(RSA_PEM.as_bytes()).expect("the RSA fixture");
        let jwk: Value = serde_json::from_str(RSA_JWK).expect("its JWK");
        let rsa_public = DecodingKey::from_rsa_components(
            jwk["n"].as_str().expect("n"),
            jwk["e"].as_str().expect("e"),
        )
        .expect("components");
        for alg in crate::auth::jwks::RSA_ALGORITHMS {
            assert!(round_trip(*alg, &rsa, &rsa_public), "{alg:?}");
        }
        for (alg, signing) in [
            (Algorithm::ES256, &sig::ECDSA_P256_SHA256_FIXED_SIGNING),
            (Algorithm::ES384, &sig::ECDSA_P384_SHA384_FIXED_SIGNING),
        ] {
            let der = pkcs8(signing);
            let (_, x, y) = ec_coordinates(&der, alg).expect("its point");
            let b64 = |v: &[u8]| {
                use base64::Engine;
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v)
            };
            let public = DecodingKey::from_ec_components(&b64(&x), &b64(&y)).expect("point");
            assert!(
                round_trip(alg, &EncodingKey::from_ec_der(&der), &public),
                "{alg:?}"
            );
            // An EC key does not verify an RSA algorithm, whatever the header says.
            assert!(new_verifier(&Algorithm::RS256, &public).is_err());
        }
        let ed = sig::Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("a key");
        let pair = sig::Ed25519KeyPair::from_pkcs8(ed.as_ref()).expect("reads back");
        let public = DecodingKey::from_ed_der(pair.public_key().as_ref());
        assert!(round_trip(
            Algorithm::EdDSA,
            &EncodingKey::from_ed_der(ed.as_ref()),
            &public
        ));
        // HMAC neither signs nor verifies, and an RSA key verifies no EC token.
        assert!(new_signer(&Algorithm::HS256, &EncodingKey::from_secret(b"k")).is_err());
        assert!(new_verifier(&Algorithm::HS256, &DecodingKey::from_secret(b"k")).is_err());
        assert!(new_verifier(&Algorithm::ES256, &rsa_public).is_err());
        assert_eq!(digest(b"abc", ThumbprintHash::SHA256).len(), 32);
    }
}
