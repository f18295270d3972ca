//! Signing keys for JWT access tokens (Ed25519, made fresh per key), as an authorization
//! server holds them: the private half signs, the public half is published as a JWK.

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{Ed25519KeyPair, KeyPair};
use serde_json::{Value, json};

/// One Ed25519 key with its key id.
#[derive(Clone)]
pub struct SigningKey {
    pub kid: String,
    pkcs8: Vec<u8>,
    public: Vec<u8>,
}

impl SigningKey {
    /// A fresh key named `kid`.
    pub fn generate(kid: &str) -> SigningKey {
        let rng = ring::rand::SystemRandom::new();
        let doc = Ed25519KeyPair::generate_pkcs8(&rng).expect("generate key");
        let pair = Ed25519KeyPair::from_pkcs8(doc.as_ref()).expect("parse key");
        SigningKey {
            kid: kid.to_string(),
            pkcs8: doc.as_ref().to_vec(),
            public: pair.public_key().as_ref().to_vec(),
        }
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> Value {
        json!({
            "kty": "OKP",
            "crv": "Ed25519",
            "use": "sig",
            "alg": "EdDSA",
            "kid": self.kid,
            "x": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&self.public),
        })
    }

    /// A JWT with `claims`, signed by this key (header names its kid).
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ed_der(&self.pkcs8)).expect("sign")
    }
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A token with a forged header: `alg` as given and no signature check possible
/// (`none`, or an HMAC "signed" with a public value).
pub fn unsigned(alg: &str, claims: &Value) -> String {
    let b64 = |v: &Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
    };
    format!(
        "{}.{}.{}",
        b64(&json!({"alg": alg, "typ": "JWT"})),
        b64(claims),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b"forged")
    )
}
