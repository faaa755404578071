//! Test support shared by the verify crate's black-box tests: a reader for
//! request vectors in the `tests/vectors/signatures.jsonl` format, which the
//! SDK fixture files under `tests/fixtures/` use too.

#![allow(dead_code)]

use base64::Engine;
use hookinbox_verify::providers::generic_hmac::GenericHmacSettings;
use hookinbox_verify::{
    adapter_for, AdapterSettings, FetchedKeys, Headers, Key, KeyError, KeyReference, NoFetchedKeys,
    Outcome, Request, ResolvedKey, SecretInput, Verifier,
};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub struct Vector {
    pub name: String,
    pub provider: String,
    pub now: i64,
    pub endpoint: EndpointSpec,
    pub request: RequestSpec,
    pub expect: Expect,
    /// For a provider that serves its own keys: the key the service would
    /// have fetched for the request (`tests/fixtures/key_fetch/`).
    #[serde(default)]
    pub fetched_key: Option<FetchedKeySpec>,
}

/// The key a vector's request names and what the service fetched for it.
#[derive(Debug, Deserialize)]
pub struct FetchedKeySpec {
    /// The certificate URL the request names, or
    #[serde(default)]
    pub certificate_url: Option<String>,
    /// the key id it names.
    #[serde(default)]
    pub kid: Option<String>,
    /// The fetched public key: a PEM `PUBLIC KEY` (SubjectPublicKeyInfo), RSA or P-256.
    pub public_key_pem: String,
}

impl FetchedKeySpec {
    fn resolved(&self) -> Result<ResolvedKey, String> {
        let reference = match (&self.certificate_url, &self.kid) {
            (Some(url), None) => KeyReference::Certificate { url: url.clone() },
            (None, Some(kid)) => KeyReference::KeyId { kid: kid.clone() },
            _ => return Err("fetched_key names neither or both of certificate_url, kid".into()),
        };
        let key = Key::rsa_from_spki_pem(&self.public_key_pem)
            .or_else(|_| {
                let body: String = self
                    .public_key_pem
                    .lines()
                    .filter(|line| !line.starts_with("-----"))
                    .collect();
                let der = hookinbox_verify::key::decode_base64(&body).ok_or(KeyError::Base64)?;
                Key::ecdsa_p256_from_spki_der(&der)
            })
            .map_err(|e| format!("fetched_key.public_key_pem: {e}"))?;
        Ok(ResolvedKey { reference, key })
    }
}

#[derive(Debug, Deserialize)]
pub struct EndpointSpec {
    pub provider: String,
    pub secrets: Vec<SecretSpec>,
    #[serde(default)]
    pub tolerance_seconds: Option<u64>,
    #[serde(default)]
    pub public_url: Option<String>,
    /// The verify token of a URL-verification GET (Meta).
    #[serde(default)]
    pub verify_token: Option<String>,
    /// The webhook id a PayPal endpoint is configured with.
    #[serde(default)]
    pub webhook_id: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct SecretSpec {
    pub version: String,
    pub value: String,
    #[serde(default)]
    pub not_before: Option<i64>,
    #[serde(default)]
    pub not_after: Option<i64>,
}

#[derive(Debug, Deserialize)]
pub struct RequestSpec {
    #[serde(default)]
    pub method: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body_b64: String,
    /// The raw query string, for schemes that sign it.
    #[serde(default)]
    pub query: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Expect {
    pub accept: bool,
    #[serde(default)]
    pub event_id: Option<String>,
    #[serde(default)]
    pub matched_secret_version: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    /// For handshakes: the exact reply body the provider expects.
    #[serde(default)]
    pub reply_body: Option<String>,
}

/// Reads a JSON-lines vector file; blank lines are skipped.
pub fn read_vectors(path: &std::path::Path) -> Vec<Vector> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read vectors at {}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(n, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), n + 1))
        })
        .collect()
}

/// Runs one vector through the real pipeline; `Err` describes a mismatch.
pub fn check(vector: &Vector) -> Result<(), String> {
    let settings = AdapterSettings {
        public_url: vector.endpoint.public_url.clone(),
        // A `generic_hmac` vector is for the example scheme: the vector
        // format has no field for the scheme's settings.
        generic_hmac: (vector.endpoint.provider == "generic_hmac")
            .then(GenericHmacSettings::example),
        verify_token: vector.endpoint.verify_token.clone(),
        webhook_id: vector.endpoint.webhook_id.clone(),
    };
    let adapter = adapter_for(&vector.endpoint.provider, &settings).map_err(|e| e.to_string())?;
    let secrets = vector.endpoint.secrets.iter().map(|s| SecretInput {
        version: s.version.clone(),
        value: s.value.clone().into(),
        not_before: s.not_before,
        not_after: s.not_after,
    });
    let verifier = Verifier::new(adapter, secrets)
        .map_err(|e| e.to_string())?
        .with_tolerance_seconds(vector.endpoint.tolerance_seconds);
    let headers: Headers = vector
        .request
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let body = base64::engine::general_purpose::STANDARD
        .decode(&vector.request.body_b64)
        .map_err(|e| format!("bad body_b64: {e}"))?;
    // A vector is received at its `now` (Dropbox's ids are receipts).
    let request = Request::new(&headers, &body)
        .with_query(vector.request.query.as_deref())
        .with_received_at_ms(vector.now.checked_mul(1000));
    let fetched: Box<dyn FetchedKeys> = match &vector.fetched_key {
        Some(spec) => Box::new(spec.resolved()?),
        None => Box::new(NoFetchedKeys),
    };
    let result = verifier.verify_with_keys(&request, vector.now, fetched.as_ref());
    let expect = &vector.expect;
    match (expect.accept, result) {
        (true, Ok(verified)) => {
            if let Some(version) = &expect.matched_secret_version {
                if verified.matched_secret_version() != version {
                    return Err(format!(
                        "matched secret version {:?}, expected {version:?}",
                        verified.matched_secret_version()
                    ));
                }
            }
            match verified.outcome() {
                Outcome::Event(event) | Outcome::Ignored(event) => match &expect.event_id {
                    Some(id) if &event.event_id != id => {
                        Err(format!("event id {:?}, expected {id:?}", event.event_id))
                    }
                    _ => Ok(()),
                },
                Outcome::Handshake(reply) => match &expect.reply_body {
                    Some(body) if body.as_bytes() != reply.body.as_slice() => Err(format!(
                        "handshake reply {:?}, expected {body:?}",
                        String::from_utf8_lossy(&reply.body)
                    )),
                    None if expect.event_id.is_some() => {
                        Err("answered as a handshake, expected an event".into())
                    }
                    _ => Ok(()),
                },
            }
        }
        (true, Err(failure)) => Err(format!(
            "refused ({}), expected acceptance",
            failure.refusal
        )),
        (false, Ok(_)) => Err(format!("accepted, expected refusal {:?}", expect.reason)),
        (false, Err(failure)) => match &expect.reason {
            Some(reason) if failure.refusal.reason.as_str() != reason => Err(format!(
                "refused with {}, expected {reason}",
                failure.refusal
            )),
            _ => Ok(()),
        },
    }
}

/// Checks every vector and panics with the full list of mismatches.
pub fn assert_all(vectors: &[Vector]) {
    assert!(!vectors.is_empty(), "no vectors read");
    let failures: Vec<String> = vectors
        .iter()
        .filter_map(|v| {
            check(v)
                .err()
                .map(|e| format!("{} ({}): {e}", v.name, v.provider))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} vectors failed:\n{}",
        failures.len(),
        vectors.len(),
        failures.join("\n")
    );
}
