//! The signers (the `sign` feature) checked both ways, through the registry
//! and the real pipeline ([`Verifier`]):
//!
//! - every provider the catalogue marks symmetric signs a body that its own
//!   adapter accepts, and the same request is refused as `signature` under
//!   another secret or with one body byte changed, and as `timestamp` one
//!   second outside the tolerance on either side; an asymmetric one says it
//!   has no signer. A provider marked symmetric without a signer fails here.
//! - every accepted vector of the fixtures (signed by the providers' SDKs or
//!   documented formulas) is reproduced header for header by the signer, from
//!   the vector's secret, timestamp and id, where the scheme is
//!   deterministic.

use std::path::PathBuf;

use base64::Engine;
use hookinbox_verify::providers::generic_hmac::GenericHmacSettings;
use hookinbox_verify::{
    adapter_for, provider_names, signer, Adapter, AdapterSettings, BodyCoverage, Headers, Outgoing,
    Reason, Request, SecretInput, SignError, SignedRequest, Signing, Verifier,
};

use crate::support::{self, Vector};

const NOW: i64 = 1_767_225_600;
const EVENT_ID: &str = "evt_round_trip_0001";
const PUBLIC_URL: &str = "https://hooks.example.com/hooks/round-trip";

/// Secrets in each shape a provider's configuration takes (Standard
/// Webhooks' `whsec_` base64, which is also plain text for the others;
/// Adyen's hex). The first one the adapter decodes is used.
const SECRETS: [&str; 2] = [
    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "44782def547aaa06c910c43932b1eb0c71fc68d9d0c057550c48ec2acf6ba056",
];
/// Another secret of each shape, which must not verify a request signed
/// with the first.
const OTHER_SECRETS: [&str; 2] = [
    "whsec_AAAAQr8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "00782def547aaa06c910c43932b1eb0c71fc68d9d0c057550c48ec2acf6ba056",
];

/// A body for providers without a fixture; the envelope of a provider may
/// not like it, which is allowed only for those providers.
const PLAIN_BODY: &[u8] = br#"{"id":"evt_round_trip_0001","type":"round.trip","created":1767225600,"data":{"object":{"id":"obj_1"}}}"#;

/// Providers whose signed timestamp is in the body the sender was given,
/// not the signing time (Linear's `webhookTimestamp`).
const TIMESTAMP_IN_BODY: &[&str] = &["linear"];

fn settings() -> AdapterSettings {
    AdapterSettings {
        public_url: Some(PUBLIC_URL.into()),
        generic_hmac: Some(GenericHmacSettings::example()),
        verify_token: Some("example-verify-token".into()),
        webhook_id: Some("EXAMPLEWEBHOOKID".into()),
    }
}

fn adapter(name: &str, settings: &AdapterSettings) -> Box<dyn Adapter> {
    adapter_for(name, settings).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn verifier(name: &str, settings: &AdapterSettings, secret: &str) -> Verifier {
    let secret = SecretInput {
        version: "current".into(),
        value: secret.to_owned().into(),
        not_before: None,
        not_after: None,
    };
    Verifier::new(adapter(name, settings), [secret]).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The index of the first secret shape the adapter decodes into a shared
/// secret.
fn secret_shape(adapter: &dyn Adapter) -> Option<usize> {
    SECRETS.iter().position(|secret| {
        adapter
            .parse_key(secret)
            .is_ok_and(|key| signer::shared_secret(&key).is_ok())
    })
}

fn fixture_files() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files = vec![root.join("vectors/signatures.jsonl")];
    for dir in [root.join("fixtures"), root.join("fixtures/documented")] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
            .collect();
        found.sort();
        files.extend(found);
    }
    files
}

/// Every vector the providers' own signers made that must be accepted.
fn accepted_vectors() -> Vec<Vector> {
    fixture_files()
        .iter()
        .flat_map(|path| support::read_vectors(path))
        .filter(|v| v.expect.accept && v.request.method.as_deref().unwrap_or("POST") == "POST")
        .collect()
}

fn body_of(vector: &Vector) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(&vector.request.body_b64)
        .unwrap_or_else(|e| panic!("{}: {e}", vector.name))
}

fn verify_at(
    verifier: &Verifier,
    signed: &SignedRequest,
    body: &[u8],
    now: i64,
) -> Result<(), Reason> {
    let headers = signed.to_headers();
    verifier
        .verify(
            // Received at `now` (Dropbox's ids are receipts).
            &Request::new(&headers, body)
                .with_query(signed.query.as_deref())
                .with_received_at_ms(now.checked_mul(1000)),
            now,
        )
        .map(|_| ())
        .map_err(|failure| failure.refusal.reason)
}

/// The signed timestamp the adapter reads from a signed request.
fn signed_timestamp(adapter: &dyn Adapter, signed: &SignedRequest) -> Option<i64> {
    let headers: Headers = signed.to_headers();
    let request = Request::new(&headers, &signed.body).with_query(signed.query.as_deref());
    adapter
        .claim(&request)
        .ok()
        .and_then(|claim| claim.timestamp)
}

fn round_trip(name: &str, body: &[u8], from_vector: bool) -> Result<(), String> {
    let settings = settings();
    let probe = adapter(name, &settings);
    let shape = secret_shape(probe.as_ref()).ok_or("no secret shape decodes to a shared secret")?;
    let (secret, other) = (SECRETS[shape], OTHER_SECRETS[shape]);
    let outgoing = Outgoing {
        body,
        secret,
        now: NOW,
        event_id: EVENT_ID,
    };
    let signed = probe
        .sign(&outgoing)
        .map_err(|e| format!("no signer: {e}"))?;
    let signed_at = signed_timestamp(probe.as_ref(), &signed);
    if !TIMESTAMP_IN_BODY.contains(&name) && signed_at.is_some_and(|at| at != NOW) {
        return Err(format!("signed at {signed_at:?}, not at {NOW}"));
    }
    let at = signed_at.unwrap_or(NOW);
    let verifier = verifier(name, &settings, secret);

    match verify_at(&verifier, &signed, &signed.body, at) {
        Ok(()) => {}
        Err(Reason::MalformedBody | Reason::MissingEventId) if !from_vector => {}
        Err(reason) => return Err(format!("signed request refused: {reason:?}")),
    }

    let other_signed = probe
        .sign(&Outgoing {
            secret: other,
            ..outgoing
        })
        .map_err(|e| format!("other secret: {e}"))?;
    if verify_at(&verifier, &other_signed, &other_signed.body, at) != Err(Reason::Signature) {
        return Err("a request signed with another secret is not refused as `signature`".into());
    }

    if probe.coverage().body == BodyCoverage::Signed && !signed.body.is_empty() {
        let mut changed = signed.body.clone();
        let middle = changed.len() / 2;
        changed[middle] ^= 0x01;
        let verdict = verify_at(&verifier, &signed, &changed, at);
        if verdict != Err(Reason::Signature) {
            return Err(format!(
                "one changed body byte gives {verdict:?}, not `signature`"
            ));
        }
    }

    if let Some(tolerance) = probe.default_tolerance_seconds() {
        let tolerance = i64::try_from(tolerance).map_err(|e| e.to_string())?;
        for late in [at + tolerance + 1, at - tolerance - 1] {
            let verdict = verify_at(&verifier, &signed, &signed.body, late);
            if verdict != Err(Reason::Timestamp) {
                return Err(format!(
                    "verified at {late} (tolerance {tolerance} s): {verdict:?}, not `timestamp`"
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn every_symmetric_provider_signs_what_its_adapter_accepts_and_nothing_else() {
    let vectors = accepted_vectors();
    let settings = settings();
    let mut failures = Vec::new();
    let mut symmetric = 0;
    for name in provider_names() {
        let probe = adapter(name, &settings);
        match probe.facts().signing {
            Signing::Asymmetric => {
                let outgoing = Outgoing {
                    body: PLAIN_BODY,
                    secret: SECRETS[0],
                    now: NOW,
                    event_id: EVENT_ID,
                };
                match probe.sign(&outgoing) {
                    Err(SignError::Asymmetric { provider }) if provider == name => {}
                    other => failures.push(format!("{name} (asymmetric): signing gave {other:?}")),
                }
            }
            Signing::Symmetric => {
                symmetric += 1;
                let vector = vectors.iter().find(|v| v.endpoint.provider == name);
                let body = vector.map_or_else(|| PLAIN_BODY.to_vec(), body_of);
                if let Err(problem) = round_trip(name, &body, vector.is_some()) {
                    failures.push(format!("{name}: {problem}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} providers failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(symmetric >= 70, "only {symmetric} symmetric providers");
}

/// What a vector's sender wrote that a signer cannot reproduce from the
/// secret, the timestamp and the id alone, by vector name prefix, and why.
/// Each of these is still accepted by the round trip above.
const NOT_REPRODUCIBLE: &[(&str, &str)] = &[
    (
        "stripe/two-v1",
        "signed under two secrets at once (rotation)",
    ),
    (
        "paddle/two-h1",
        "signed under two secrets at once (rotation)",
    ),
    (
        "orb/rotation",
        "signed under two secrets at once (rotation)",
    ),
    (
        "persona/rotation",
        "signed under two secrets at once (rotation)",
    ),
    (
        "standard/rotation",
        "signed under two secrets at once (rotation)",
    ),
    (
        "standard/two-signatures",
        "signed under two secrets at once (rotation)",
    ),
    (
        "standard/v1a",
        "Ed25519 (`v1a`): the private key is the sender's",
    ),
    (
        "standard/svix-headers",
        "sent under `svix-` headers; the signer writes `webhook-`",
    ),
    (
        "stytch/",
        "sent under `svix-` headers; the signer writes `webhook-`",
    ),
    (
        "github/uppercase-hex",
        "upper-case hex written by hand, not by GitHub",
    ),
    (
        "sumsub/sha",
        "signed with SHA-512 or SHA-1 as `X-Payload-Digest-Alg` allows; the signer writes SHA-256",
    ),
    (
        "vapi/timestamp-in-seconds",
        "`x-timestamp` in seconds; the signer writes milliseconds",
    ),
    (
        "box/",
        "Box writes its time in the Pacific zone; the signer writes UTC",
    ),
    (
        "twitch/",
        "Twitch's time has nanoseconds; the signer writes whole seconds",
    ),
    (
        "contentful/",
        "also signs `x-contentful-topic`, a header the signer is not given",
    ),
    (
        "plivo/two-signatures",
        "signed under two secrets at once (rotation)",
    ),
    (
        "vonage/",
        "the JWT carries a random `jti`, the API key and the application id",
    ),
    (
        "monday/",
        "the JWT carries the account, the user and a short-lived API token",
    ),
    (
        "pagerduty/rotating-secrets",
        "signed under two secrets at once (rotation)",
    ),
    (
        "docusign/second-connect-key",
        "signed under two Connect keys at once (rotation)",
    ),
];

/// Reproduces one accepted vector: the signer, given the vector's secret,
/// its signed timestamp and its id, must write every signature-bearing
/// header the vector carries, byte for byte, and the same body.
fn reproduce(vector: &Vector) -> Result<usize, String> {
    let settings = AdapterSettings {
        public_url: vector.endpoint.public_url.clone(),
        generic_hmac: (vector.endpoint.provider == "generic_hmac")
            .then(GenericHmacSettings::example),
        verify_token: vector.endpoint.verify_token.clone(),
        webhook_id: None,
    };
    let adapter = adapter_for(&vector.endpoint.provider, &settings).map_err(|e| e.to_string())?;
    let secret = vector
        .endpoint
        .secrets
        .iter()
        .find(|s| Some(&s.version) == vector.expect.matched_secret_version.as_ref())
        .or(vector.endpoint.secrets.first())
        .ok_or("no secret")?;
    let body = body_of(vector);
    let headers: Headers = vector
        .request
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let request = Request::new(&headers, &body).with_query(vector.request.query.as_deref());
    let now = adapter
        .claim(&request)
        .map_err(|e| e.to_string())?
        .timestamp
        .unwrap_or(vector.now);
    let sign = |event_id: &str| {
        adapter
            .sign(&Outgoing {
                body: &body,
                secret: &secret.value,
                now,
                event_id,
            })
            .map_err(|e| e.to_string())
    };
    // The headers that carry the id are those a placeholder id shows up in;
    // the vector's own value of such a header is its id.
    const PLACEHOLDER: &str = "placeholder-event-id";
    let probe = sign(PLACEHOLDER)?;
    let event_id = probe
        .headers
        .iter()
        .find(|(_, value)| value == PLACEHOLDER)
        .and_then(|(name, _)| headers.get(name))
        .or(vector.expect.event_id.as_deref())
        .unwrap_or(PLACEHOLDER)
        .to_owned();
    let signed = sign(&event_id)?;
    // Adyen and Mailgun carry the signature inside the JSON body, which the
    // signer writes back: the same JSON, whitespace and key order aside.
    if signed.body != body && json(&signed.body) != json(&body) {
        return Err("the signed body differs from the vector's".into());
    }
    let mut compared = 0;
    for (name, value) in &signed.headers {
        if name.eq_ignore_ascii_case("content-type") {
            continue;
        }
        match headers.get(name) {
            Some(sent) if sent == value => compared += 1,
            Some(sent) => return Err(format!("{name}: wrote {value:?}, the vector has {sent:?}")),
            None => {}
        }
    }
    if let (Some(query), Some(sent)) = (&signed.query, &vector.request.query) {
        if query != sent {
            return Err(format!("query: wrote {query:?}, the vector has {sent:?}"));
        }
        // A signature carried in the query (PandaDoc's) counts as reproduced.
        compared += 1;
    }
    let signature_in_body = signed.headers.len() == 1;
    if compared == 0 && !signature_in_body {
        return Err("no header of the vector was reproduced".into());
    }
    Ok(compared)
}

fn json(bytes: &[u8]) -> Option<serde_json::Value> {
    serde_json::from_slice(bytes).ok()
}

#[test]
fn signers_reproduce_the_providers_own_vectors_byte_for_byte() {
    let settings = settings();
    let vectors: Vec<Vector> = accepted_vectors()
        .into_iter()
        .filter(|v| adapter(&v.endpoint.provider, &settings).facts().signing == Signing::Symmetric)
        .filter(|v| {
            !NOT_REPRODUCIBLE
                .iter()
                .any(|(prefix, _)| v.name.starts_with(prefix))
        })
        .collect();
    let failures: Vec<String> = vectors
        .iter()
        .filter_map(|v| reproduce(v).err().map(|e| format!("{}: {e}", v.name)))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} vectors not reproduced:\n{}",
        failures.len(),
        vectors.len(),
        failures.join("\n")
    );
    assert!(vectors.len() > 100, "only {} vectors", vectors.len());
}
