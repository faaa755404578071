//! `flutterwave` — Flutterwave (v3) webhooks, authenticated by the secret hash.
//!
//! Follows Flutterwave's "Webhooks" guide (developer.flutterwave.com/v3.0/docs/webhooks,
//! "Verifying webhook signatures"): the dashboard's *secret hash* is sent as
//! is in the `verif-hash` header of every webhook; nothing is signed.
//!
//! - Header: `verif-hash` = the secret hash as configured in the dashboard,
//!   compared with every configured secret version in constant time
//!   (`Key::Token`).
//! - Signed bytes: none; whoever holds the hash could send any body (declared
//!   [`BodyCoverage::Token`]). TLS protects the body in transit.
//! - Tolerance: none. No timestamp is sent.
//! - Event id: Flutterwave sends no event id; the id is `"{event}:{data.id}"`
//!   (`charge.completed:285959875`), the event name and the id of the
//!   transaction (or transfer) it reports, which a retry repeats. Not covered
//!   by anything: declared unsigned, so hookinbox also de-duplicates by body
//!   fingerprint. Type: `event`. Object id: `data.id`. Created:
//!   `data.created_at` (RFC 3339). No object version.
//! - Redelivery window: with retries enabled, a failed webhook is retried up
//!   to 3 times, 30 minutes apart. One day is kept.

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    Adapter, BodyCoverage, Key, KeyError, Outcome, Refusal, Request, SignatureClaim,
    SignatureCoverage, SignedMessage,
};
use crate::{Algorithm, Candidate};

/// The header carrying the dashboard's secret hash.
const TOKEN_HEADER: &str = "verif-hash";

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Flutterwave",
    docs_url: "https://developer.flutterwave.com/v3.0/docs/webhooks",
    scheme: "shared secret hash, `verif-hash`",
    signed_parts: "none (token)",
    id_source: "`{event}:{data.id}` (unsigned)",
    handshake: None,
    batch: None,
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/documented_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Flutterwave;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Flutterwave))
}

impl Adapter for Flutterwave {
    fn name(&self) -> &'static str {
        "flutterwave"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        24 * 3600
    }

    /// A token sent as is: it authenticates the request, not the body or what it says.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage {
            body: BodyCoverage::Token,
            event_id: false,
            event_type: false,
        }
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::token_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new(),
            candidates: vec![Candidate::new(
                Algorithm::Token,
                required(request.headers, TOKEN_HEADER)?.as_bytes().to_vec(),
            )],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let (Some(name), Some(object)) = (
            envelope::string_at(&body, "/event"),
            envelope::string_at(&body, "/data/id"),
        ) else {
            return Err(Refusal::missing_event_id(
                "the body needs `event` and `data.id` to name the event",
            ));
        };
        let event = Envelope::with_id(format!("{name}:{object}"))?
            .event_type(Some(name))
            .object_id(Some(object))
            .created_at(envelope::rfc3339_at(&body, "/data/created_at"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        crate::signer::token(TOKEN_HEADER, &key, outgoing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const SECRET: &str = "flw-secret-hash";
    const BODY: &[u8] = br#"{"event":"charge.completed","data":{"id":285959875,"tx_ref":"Links-616626414629","amount":100,"status":"successful","created_at":"2023-11-14T22:13:20.000Z"}}"#;

    fn verify(credential: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Flutterwave), SECRET);
        let headers: Headers = credential
            .map(|value| ("verif-hash", value.to_owned()))
            .iter()
            .map(|(name, value)| (*name, value.as_str()))
            .collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn valid_request_reads_the_envelope() {
        let verified = verify(Some(SECRET), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "charge.completed:285959875");
        assert_eq!(event.event_type.as_deref(), Some("charge.completed"));
        assert_eq!(event.object_id.as_deref(), Some("285959875"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        assert!(verified.unsigned_metadata().event_id);
    }

    #[test]
    fn refusals() {
        assert_eq!(verify(Some("other"), BODY).unwrap_err(), Reason::Signature);
        assert_eq!(
            verify(Some(&format!("{SECRET}x")), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify(None, BODY).unwrap_err(), Reason::MissingSignature);
        let no_id = br#"{"event":"charge.completed","data":{}}"#;
        assert_eq!(
            verify(Some(SECRET), no_id).unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(Some(SECRET), b"not json").unwrap_err(),
            Reason::MalformedBody
        );
    }
}
