//! `auth0` — Auth0 log streams of the "Custom Webhook" kind, authenticated
//! by the stream's Authorization Token.
//!
//! Follows Auth0's "Custom Log Streams Using HTTP Webhooks" page
//! (auth0.com/docs/customize/log-streams/custom-log-streams): **Auth0 signs
//! nothing**. The one proof of origin a stream offers is its optional
//! "Authorization Token", sent as the whole value of the `Authorization`
//! header.
//!
//! - Credential: `Authorization: <token>`. The configured secret is that
//!   token exactly as typed into the stream's settings (often
//!   `Bearer …`, sent as written), compared in constant time. An endpoint
//!   therefore cannot start without it, and there is no weaker mode: a
//!   stream configured without a token is refused (`missing_signature`).
//! - Signed bytes: none. Whoever holds the token could send any body
//!   (declared [`BodyCoverage::Token`]); TLS protects it in transit.
//! - Tolerance: none. No timestamp is signed.
//! - Body: the stream's Content Format — a JSON array of log events, JSON
//!   lines (one event per line) or a single JSON object — each event
//!   `{"log_id": …, "data": {…}}`. One request is one batch, and a batch is
//!   the unit hookinbox stores.
//! - Event id: the event's `log_id` (else `data.log_id`) for a one-event
//!   batch; `"{first log_id}..{last log_id}/{count}"` for a larger one, as
//!   for SendGrid's batches (Auth0's own ids, never a hash; a retried batch
//!   is resent as it was). Nothing binds it, so it is declared unsigned and
//!   hookinbox also de-duplicates by body fingerprint. A batch that is empty
//!   or whose first or last event has no id is `missing_event_id`.
//! - Type: the events' common `data.type` (Auth0's log event type code,
//!   `s`, `f`, `seacft`, …) when they all share one, `batch` when they
//!   differ; unsigned. Created: the first event's `data.date` (RFC 3339).
//!   No object id or version.
//! - Redelivery window: Auth0 retries a failed delivery and pauses a stream
//!   that keeps failing; the page followed here states no retry span, so
//!   three days are kept, an assumption to revisit when Auth0 documents one.

use serde_json::Value;

use crate::catalogue::{ProviderFacts, VectorSource};
use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature_header::required;
use crate::{
    Adapter, Algorithm, BodyCoverage, Candidate, Key, KeyError, Outcome, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignedMessage,
};

/// The header carrying the stream's Authorization Token.
const AUTHORIZATION: &str = "Authorization";

/// The catalogue entry of this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Auth0 (log streams)",
    docs_url: "https://auth0.com/docs/customize/log-streams/custom-log-streams",
    scheme: "no signature: the stream's Authorization Token, the whole `Authorization` value (the endpoint secret)",
    signed_parts: "none (the token authenticates the request)",
    id_source: "`log_id`, or `{first}..{last}/{count}` for a batch",
    handshake: None,
    batch: Some("a JSON array or JSON lines of log events: the whole request is stored as one event"),
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/provc_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Auth0;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Auth0))
}

impl Adapter for Auth0 {
    fn name(&self) -> &'static str {
        "auth0"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3 * 24 * 3600
    }

    /// Auth0 signs nothing: the token authenticates the request, not the
    /// body or what it says.
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
        let token = required(request.headers, AUTHORIZATION)?;
        Ok(SignatureClaim {
            timestamp: None,
            message: SignedMessage::new(),
            candidates: vec![Candidate::new(Algorithm::Token, token.as_bytes().to_vec())],
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let events = log_events(request.body)?;
        let (Some(first), Some(last)) = (events.first(), events.last()) else {
            return Err(Refusal::missing_event_id("the batch has no log events"));
        };
        let first_id = log_id(first, "first")?;
        let id = if events.len() == 1 {
            first_id
        } else {
            format!("{first_id}..{}/{}", log_id(last, "last")?, events.len())
        };
        let event = Envelope::with_id(id)?
            .event_type(
                super::sendgrid::common(&events, "/data/type").or_else(|| Some("batch".to_owned())),
            )
            .created_at(envelope::rfc3339_at(first, "/data/date"));
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        crate::signer::token(AUTHORIZATION, &key, outgoing)
    }
}

/// The log events of a body in any of the stream's content formats: a JSON
/// array, one JSON object, or JSON lines. Every event must be an object.
fn log_events(body: &[u8]) -> Result<Vec<Value>, Refusal> {
    let events = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(events)) => events,
        Ok(object @ Value::Object(_)) => vec![object],
        Ok(_) => return Err(not_logs()),
        Err(_) => body
            .split(|byte| *byte == b'\n')
            .filter(|line| !line.trim_ascii().is_empty())
            .map(|line| serde_json::from_slice::<Value>(line).map_err(|_| not_logs()))
            .collect::<Result<_, _>>()?,
    };
    if events.iter().any(|event| !event.is_object()) {
        return Err(not_logs());
    }
    Ok(events)
}

fn not_logs() -> Refusal {
    Refusal::malformed_body("the body is not a JSON array, object or lines of log events")
}

fn log_id(event: &Value, which: &str) -> Result<String, Refusal> {
    envelope::string_at(event, "/log_id")
        .or_else(|| envelope::string_at(event, "/data/log_id"))
        .filter(|id| !id.trim().is_empty())
        .ok_or_else(|| Refusal::missing_event_id(format!("the {which} log event has no `log_id`")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const TOKEN: &str = "Bearer auth0-log-stream-token-0001";
    const ONE: &str = r#"{"log_id":"90020231114221320123456789012345678901234567890123","data":{"date":"2023-11-14T22:13:20.123Z","type":"s","description":"Success Login","client_id":"AaiyAPdpYdesoKnqjj8HJqRn4T5titww","ip":"203.0.113.7","user_id":"auth0|5f7c8ec7c33c6c004bbafe82","log_id":"90020231114221320123456789012345678901234567890123"}}"#;
    const TWO: &str = r#"{"log_id":"90020231114221321000000000000000000000000000000002","data":{"date":"2023-11-14T22:13:21.000Z","type":"f","description":"Wrong password","log_id":"90020231114221321000000000000000000000000000000002"}}"#;

    fn verify(token: Option<&str>, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Auth0), TOKEN);
        let headers: Headers = token.map(|t| (AUTHORIZATION, t)).into_iter().collect();
        test_support::verify(&verifier, &headers, body, 0)
    }

    #[test]
    fn every_content_format_reads_the_batch() {
        let single = verify(Some(TOKEN), ONE.as_bytes()).unwrap();
        let event = single.event().unwrap();
        assert_eq!(
            event.event_id,
            "90020231114221320123456789012345678901234567890123"
        );
        assert_eq!(event.event_type.as_deref(), Some("s"));
        assert_eq!(event.created_at, Some(1_700_000_000));
        assert!(single.unsigned_metadata().event_id);

        let batch_id = "90020231114221320123456789012345678901234567890123..90020231114221321000000000000000000000000000000002/2";
        let array = format!("[{ONE},{TWO}]");
        let lines = format!("{ONE}\n{TWO}\n");
        for body in [array, lines] {
            let verified = verify(Some(TOKEN), body.as_bytes()).unwrap();
            let event = verified.event().unwrap();
            assert_eq!(event.event_id, batch_id, "{body}");
            assert_eq!(event.event_type.as_deref(), Some("batch"));
        }
    }

    #[test]
    fn refusals() {
        assert_eq!(
            verify(Some("Bearer another-token"), ONE.as_bytes()).unwrap_err(),
            Reason::Signature
        );
        // The token is the whole header value: without its `Bearer ` it is another token.
        assert_eq!(
            verify(Some("auth0-log-stream-token-0001"), ONE.as_bytes()).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(
            verify(None, ONE.as_bytes()).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(Some(TOKEN), b"[]").unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(Some(TOKEN), br#"[{"data":{"type":"s"}}]"#).unwrap_err(),
            Reason::MissingEventId
        );
        for bad in [&b"not json"[..], b"[1,2]", b"\"s\""] {
            assert_eq!(
                verify(Some(TOKEN), bad).unwrap_err(),
                Reason::MalformedBody,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
