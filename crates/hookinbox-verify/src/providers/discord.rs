//! `discord` — Discord interactions delivered to an Interactions Endpoint URL.
//!
//! - Headers: `X-Signature-Ed25519` (hex of the 64-byte signature) and
//!   `X-Signature-Timestamp` (integer unix seconds).
//! - Signed bytes: `"{X-Signature-Timestamp}{raw body}"` — the timestamp
//!   header exactly as sent, then the body, with no separator (as Discord's
//!   `discord-interactions` libraries verify).
//! - Algorithm and key: Ed25519. The configured secret is the application's
//!   *public key* from the developer portal: hex of 32 bytes. Discord holds
//!   the private key; nothing secret is configured here.
//! - Tolerance: Discord documents none (an interaction must be answered within
//!   3 s, so a legitimate request is never old). hookinbox applies 300 s in
//!   both directions, the same window as its other schemes, so a captured
//!   request cannot be replayed later; a malformed timestamp is a `timestamp`
//!   refusal.
//! - PING (`type: 1`) is answered after verification with `{"type":1}` (PONG)
//!   as a handshake and never stored: Discord sends it to validate the URL.
//! - Event id: body `id`, the interaction's snowflake. Discord does not retry
//!   interactions, so there is nothing to be stable across; the id is unique
//!   per interaction. Type: the interaction kind (`application_command`,
//!   `message_component`, `application_command_autocomplete`,
//!   `modal_submit`), followed by `.{data.name}` when the interaction names a
//!   command (`application_command.ping`), so an allowlist can take
//!   `application_command.*`. Created: the snowflake's embedded time. No
//!   object id or version: interactions are not versions of an object.
//! - Redelivery window: none is documented (interactions are not redelivered);
//!   15 minutes, the lifetime of an interaction token, is returned.
//!
//! Limits: this adapter serves the *Interactions* endpoint. A body of
//! Discord's separate *Webhook Events* product (it carries an `event` object
//! and `type` 0/1 with other meanings, and no `id`) is refused as
//! `malformed_body` rather than mistaken for a PING and silently dropped.
//! Discord expects an interaction callback (for example a deferred reply) in
//! the HTTP response of a command; the generic accepted-reply of the ingress is
//! not one, so an app that must answer users needs the follow-up endpoints.

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Refusal, Reply, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// Hex of the 64-byte Ed25519 signature of `"{timestamp as sent}{body}"`.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Signature-Ed25519", Algorithm::Ed25519)
        .with_length(ed25519_dalek::SIGNATURE_LENGTH);
const TIMESTAMP: &str = "X-Signature-Timestamp";

/// Discord's epoch (2015-01-01T00:00:00Z) in unix milliseconds, for snowflakes.
const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;

/// Interaction type of a PING.
const PING: i64 = 1;

#[derive(Debug, Default)]
pub struct Discord;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Discord))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Discord (interactions)",
    docs_url: "https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers",
    scheme: "Ed25519 (application public key, hex), hex, `X-Signature-Ed25519`",
    signed_parts: "`{X-Signature-Timestamp}{body}`",
    id_source: "body `id` (the interaction's snowflake)",
    handshake: Some("PING (`type: 1`) answered with `{\"type\":1}`, not stored"),
    batch: None,
    vectors: VectorSource::OfficialSdk("discord-interactions (npm), verify only"),
    signing: crate::Signing::Asymmetric,
};

impl Adapter for Discord {
    fn name(&self) -> &'static str {
        "discord"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        15 * 60
    }

    /// Ed25519 over the timestamp and the body, which holds the id and the type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        let trimmed = secret.trim();
        if trimmed.is_empty() {
            return Err(KeyError::Empty);
        }
        let bytes = hex::decode(trimmed).map_err(|_| KeyError::Hex)?;
        Key::ed25519_from_bytes(&bytes)
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.timestamped_claim(request, TIMESTAMP, |t| t.text.to_owned())
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        if body.get("event").is_some() {
            return Err(Refusal::malformed_body(
                "a Discord Webhook Events body; the discord adapter serves the Interactions endpoint",
            ));
        }
        let kind = envelope::integer_at(&body, "/type")
            .ok_or_else(|| Refusal::malformed_body("no integer interaction `type` in the body"))?;
        if kind == PING {
            return Ok(Outcome::Handshake(Reply::json(
                &serde_json::json!({ "type": 1 }),
            )));
        }
        let event = envelope::required_id_at(&body, "/id")?;
        let created_at = snowflake_seconds(&event.event_id);
        let event_type = interaction_type(kind, envelope::string_at(&body, "/data/name"));
        Ok(Outcome::Event(
            event.event_type(Some(event_type)).created_at(created_at),
        ))
    }
}

/// The event type of an interaction: its kind's name, and the command name
/// where the interaction carries one.
fn interaction_type(kind: i64, command: Option<String>) -> String {
    let name = match kind {
        2 => "application_command".to_owned(),
        3 => "message_component".to_owned(),
        4 => "application_command_autocomplete".to_owned(),
        5 => "modal_submit".to_owned(),
        other => format!("interaction_{other}"),
    };
    match command.filter(|c| !c.is_empty()) {
        Some(command) if kind == 2 || kind == 4 => format!("{name}.{command}"),
        _ => name,
    }
}

/// The creation time (unix seconds) embedded in a Discord snowflake.
fn snowflake_seconds(id: &str) -> Option<i64> {
    let snowflake: u64 = id.parse().ok()?;
    let millis = (snowflake >> 22).checked_add(DISCORD_EPOCH_MS)?;
    i64::try_from(millis / 1000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason};
    use ed25519_dalek::{Signer, SigningKey};
    use proptest::prelude::*;

    const SEED: [u8; 32] = [7; 32];

    fn public_hex(seed: &[u8; 32]) -> String {
        hex::encode(SigningKey::from_bytes(seed).verifying_key().as_bytes())
    }

    fn sign(seed: &[u8; 32], timestamp: &str, body: &[u8]) -> String {
        let mut message = timestamp.as_bytes().to_vec();
        message.extend_from_slice(body);
        hex::encode(SigningKey::from_bytes(seed).sign(&message).to_bytes())
    }

    fn headers(timestamp: &str, signature: &str) -> Headers {
        [
            ("X-Signature-Ed25519", signature),
            ("X-Signature-Timestamp", timestamp),
        ]
        .into_iter()
        .collect()
    }

    fn verify(h: &Headers, body: &[u8], now: i64) -> Result<Outcome, Reason> {
        let verifier = test_support::verifier(Box::new(Discord), &public_hex(&SEED));
        test_support::verify(&verifier, h, body, now).map(|v| v.into_outcome())
    }

    const COMMAND: &[u8] =
        br#"{"id":"1186871812331540501","type":2,"data":{"name":"ping"},"token":"t"}"#;

    #[test]
    fn signed_command_verifies_with_id_type_and_time() {
        let h = headers("1000", &sign(&SEED, "1000", COMMAND));
        let Outcome::Event(event) = verify(&h, COMMAND, 1000).unwrap() else {
            panic!("expected an event");
        };
        assert_eq!(event.event_id, "1186871812331540501");
        assert_eq!(
            event.event_type.as_deref(),
            Some("application_command.ping")
        );
        // 1186871812331540501 >> 22 = 282972291071 ms after the Discord epoch.
        assert_eq!(event.created_at, Some(1_703_042_691));
    }

    #[test]
    fn ping_is_answered_with_pong_and_not_an_event() {
        let body = br#"{"id":"1","type":1,"application_id":"2","token":"t","version":1}"#;
        let h = headers("1000", &sign(&SEED, "1000", body));
        let outcome = verify(&h, body, 1000).unwrap();
        let Outcome::Handshake(reply) = outcome else {
            panic!("expected a handshake, got {outcome:?}");
        };
        assert_eq!(reply.status, 200);
        assert_eq!(reply.content_type, "application/json");
        assert_eq!(reply.body, br#"{"type":1}"#);
    }

    #[test]
    fn unsigned_ping_is_refused_before_any_answer() {
        let body = br#"{"id":"1","type":1}"#;
        let h = headers("1000", &sign(&[8; 32], "1000", body));
        assert_eq!(verify(&h, body, 1000).unwrap_err(), Reason::Signature);
    }

    #[test]
    fn tampered_body_and_wrong_key_are_signature_refusals() {
        let h = headers("1000", &sign(&SEED, "1000", COMMAND));
        let mut tampered = COMMAND.to_vec();
        tampered[10] ^= 1;
        assert_eq!(verify(&h, &tampered, 1000).unwrap_err(), Reason::Signature);
        let other = headers("1000", &sign(&[9; 32], "1000", COMMAND));
        assert_eq!(
            verify(&other, COMMAND, 1000).unwrap_err(),
            Reason::Signature
        );
        // The timestamp is part of the signed bytes.
        let moved = headers("1001", &sign(&SEED, "1000", COMMAND));
        assert_eq!(
            verify(&moved, COMMAND, 1000).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn missing_and_malformed_headers() {
        let sig = sign(&SEED, "1000", COMMAND);
        let only_ts: Headers = [("X-Signature-Timestamp", "1000")].into_iter().collect();
        let only_sig: Headers = [("X-Signature-Ed25519", sig.as_str())]
            .into_iter()
            .collect();
        assert_eq!(
            verify(&only_ts, COMMAND, 1000).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify(&only_sig, COMMAND, 1000).unwrap_err(),
            Reason::MissingSignature
        );
        for bad in ["zz", "abcd", &sig[..126]] {
            assert_eq!(
                verify(&headers("1000", bad), COMMAND, 1000).unwrap_err(),
                Reason::MalformedSignature,
                "{bad}"
            );
        }
        assert_eq!(
            verify(&headers("10x0", &sig), COMMAND, 1000).unwrap_err(),
            Reason::Timestamp
        );
    }

    #[test]
    fn window_edges_both_directions() {
        let at = |ts: i64| {
            let text = ts.to_string();
            verify(
                &headers(&text, &sign(&SEED, &text, COMMAND)),
                COMMAND,
                10_000,
            )
        };
        test_support::assert_window(10_000, 300, at);
    }

    #[test]
    fn webhook_events_bodies_and_missing_ids_are_refused_after_verification() {
        let event = br#"{"version":1,"application_id":"2","type":1,"event":{"type":"X"}}"#;
        let h = headers("1000", &sign(&SEED, "1000", event));
        assert_eq!(verify(&h, event, 1000).unwrap_err(), Reason::MalformedBody);
        let no_id = br#"{"type":2}"#;
        let h = headers("1000", &sign(&SEED, "1000", no_id));
        assert_eq!(verify(&h, no_id, 1000).unwrap_err(), Reason::MissingEventId);
    }

    #[test]
    fn public_key_shapes_are_checked() {
        assert_eq!(Discord.parse_key("zz").unwrap_err(), KeyError::Hex);
        assert_eq!(Discord.parse_key("").unwrap_err(), KeyError::Empty);
        assert!(matches!(
            Discord.parse_key(&"ab".repeat(31)).unwrap_err(),
            KeyError::PublicKey(_)
        ));
        assert!(Discord.parse_key(&public_hex(&SEED)).is_ok());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn any_signed_body_verifies_and_any_flipped_byte_does_not(
            seed in any::<[u8; 32]>(),
            body in proptest::collection::vec(any::<u8>(), 0..256),
            index in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signature = sign(&seed, "5000", &body);
            let others = [(TIMESTAMP, "5000")];
            let signed =
                Signed::in_header(Box::new(Discord), &public_hex(&seed), SIGNATURE, &signature, &others);
            test_support::check_single_byte_changes(&signed, &body, index, flip)?;
        }
    }
}
