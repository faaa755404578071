//! Requests in which a provider hands the receiver the secret it will sign
//! with: Asana's first `POST` carries `X-Hook-Secret`, Notion's first `POST`
//! is `{"verification_token": …}`. Neither is signed — the provider has
//! nothing to sign it with yet — and the operator never chooses (Asana: never
//! sees) the secret.
//!
//! A request never chooses its own verification key (docs/architecture.md
//! §3), so a handover is taken only when the URL it was posted to carries
//! the endpoint's handshake token, `?handshake=<verify_token>`: the operator
//! gives the provider that URL, and only whoever holds it can hand a secret
//! over ([`HandshakeToken`], compared in constant time). An adapter
//! recognises the request and checks the token
//! ([`Adapter::handover`](crate::Adapter::handover)); the service stores the
//! secret sealed and never logs it.

use secrecy::SecretString;
use sha2::Digest;
use subtle::ConstantTimeEq;

use crate::registry::{AdapterSettings, SettingsError};
use crate::{Probe, Refusal, Reply};

/// The query parameter of a handover URL that carries the handshake token.
pub const HANDSHAKE_PARAMETER: &str = "handshake";

/// The longest secret taken from a handover.
pub const MAX_HANDOVER_SECRET_LEN: usize = 256;

/// A recognised handover: the secret, and the answer the provider expects
/// once the receiver has kept it.
#[derive(Debug)]
pub struct Handover {
    /// The secret the provider will sign with; never logged (`Debug` shows
    /// it redacted).
    pub secret: SecretString,
    /// The answer on success (Asana: 200 with the secret echoed in
    /// [`Handover::echo_header`]; Notion: 200).
    pub reply: Reply,
    /// The response header the secret must be echoed in, if any.
    pub echo_header: Option<&'static str>,
}

/// A handed-over secret as the provider writes it: printable ASCII, no
/// spaces, at most [`MAX_HANDOVER_SECRET_LEN`] bytes. Anything else is not a
/// secret a provider sends (and could not be echoed in a header).
pub fn plain_secret(value: &str) -> Option<SecretString> {
    let plain = !value.is_empty()
        && value.len() <= MAX_HANDOVER_SECRET_LEN
        && value.bytes().all(|b| b.is_ascii_graphic());
    plain.then(|| SecretString::from(value.to_owned()))
}

/// The endpoint's `verify_token`, which a handover's URL must carry as
/// `?handshake=…`. Only its SHA-256 is kept, compared in constant time (so
/// the time tells neither the token nor its length).
pub struct HandshakeToken {
    digest: [u8; 32],
}

impl std::fmt::Debug for HandshakeToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HandshakeToken([redacted])")
    }
}

impl HandshakeToken {
    /// The token of `provider`'s endpoint: its `verify_token`, required.
    pub fn from_settings(
        settings: &AdapterSettings,
        provider: &'static str,
    ) -> Result<HandshakeToken, SettingsError> {
        let token = settings
            .verify_token
            .as_deref()
            .filter(|token| !token.is_empty())
            .ok_or(SettingsError::Missing {
                provider,
                field: "verify_token",
            })?;
        Ok(HandshakeToken {
            digest: sha2::Sha256::digest(token.as_bytes()).into(),
        })
    }

    /// Whether the raw `query` of a request carries this token.
    pub fn check(&self, query: Option<&str>) -> Result<(), Refusal> {
        let probe = Probe {
            method: "POST",
            query,
            headers: &crate::Headers::new(),
        };
        let presented = probe.query_parameter(HANDSHAKE_PARAMETER).ok_or_else(|| {
            Refusal::missing_signature(
                "a handover is taken only at the URL with ?handshake=<the endpoint's verify_token>",
            )
        })?;
        let digest: [u8; 32] = sha2::Sha256::digest(presented.as_bytes()).into();
        if bool::from(digest.ct_eq(&self.digest)) {
            Ok(())
        } else {
            Err(Refusal::signature(
                "?handshake= is not the endpoint's verify_token",
            ))
        }
    }

    /// The handover of `secret` answered with `reply`, when the request's
    /// `query` carries this token and the secret is plain.
    pub fn hand_over(
        &self,
        query: Option<&str>,
        secret: &str,
        reply: Reply,
        echo_header: Option<&'static str>,
    ) -> Result<Handover, Refusal> {
        self.check(query)?;
        let secret = plain_secret(secret)
            .ok_or_else(|| Refusal::malformed_signature("the handed-over secret is not plain"))?;
        Ok(Handover {
            secret,
            reply,
            echo_header,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    #[test]
    fn only_plain_secrets_are_taken() {
        assert_eq!(
            plain_secret("b537207f20cbfa02").unwrap().expose_secret(),
            "b537207f20cbfa02"
        );
        for bad in [
            "",
            "a b",
            "a\nb",
            "é",
            &"a".repeat(MAX_HANDOVER_SECRET_LEN + 1),
        ] {
            assert!(plain_secret(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn the_token_must_be_in_the_query() {
        let settings = AdapterSettings {
            verify_token: Some("hs-token-1".into()),
            ..AdapterSettings::default()
        };
        let token = HandshakeToken::from_settings(&settings, "asana").unwrap();
        assert!(token.check(Some("handshake=hs-token-1")).is_ok());
        assert!(token.check(Some("a=1&handshake=hs%2Dtoken%2D1")).is_ok());
        let reason = |query| token.check(query).unwrap_err().reason;
        assert_eq!(
            reason(Some("handshake=hs-token-2")),
            crate::Reason::Signature
        );
        assert_eq!(
            reason(Some("handshake=hs-token-1&handshake=x")),
            crate::Reason::MissingSignature
        );
        assert_eq!(reason(None), crate::Reason::MissingSignature);
        assert!(!format!("{token:?}").contains("hs-token"));
        assert_eq!(
            HandshakeToken::from_settings(&AdapterSettings::default(), "notion").unwrap_err(),
            SettingsError::Missing {
                provider: "notion",
                field: "verify_token"
            }
        );
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let handover = Handover {
            secret: plain_secret("s3cr3t-value").unwrap(),
            reply: Reply::text(Vec::new()),
            echo_header: None,
        };
        assert!(!format!("{handover:?}").contains("s3cr3t-value"));
    }
}
