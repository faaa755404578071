//! The scheme several providers share beside Stripe: one header of
//! `key=value` items (a [`SignatureList`]) holding one timestamp and one or
//! more hex HMACs of `"{timestamp}.{raw body}"` — Tailscale's
//! `t=…,v1=…`, WorkOS's `t=<ms>, v1=…`, Buildkite's
//! `timestamp=…,signature=…`.
//!
//! What differs between them is only the header, the item keys and whether
//! the timestamp counts seconds or milliseconds, so the claim is written
//! once here and each adapter declares its [`SignatureList`] and
//! [`TimestampUnit`]. The timestamp is signed as the integer the header
//! carries, so writing it back (`{t}.`) rebuilds the signed bytes.

use crate::signature::hmac_sha256;
use crate::{Refusal, Request, SignatureClaim, SignatureList, SignedMessage};

/// What the timestamp item counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampUnit {
    Seconds,
    Milliseconds,
}

impl TimestampUnit {
    fn seconds(self, value: i64) -> i64 {
        match self {
            TimestampUnit::Seconds => value,
            TimestampUnit::Milliseconds => value.div_euclid(1000),
        }
    }
}

impl SignatureList<'_> {
    /// The claim of a `"{timestamp}.{body}"` scheme: the header must carry
    /// exactly one timestamp item (`malformed_signature` otherwise, as two
    /// would leave the signed bytes ambiguous) and at least one signature
    /// item (`malformed_signature`); any of the signatures may match (one
    /// per secret while the sender rotates).
    pub fn dotted_timestamp_claim<'r>(
        &self,
        request: &Request<'r>,
        unit: TimestampUnit,
    ) -> Result<SignatureClaim<'r>, Refusal> {
        let listed = self.read(request.headers)?;
        let [timestamp] = listed.timestamps[..] else {
            return Err(Refusal::malformed_signature(format!(
                "{} needs exactly one `{}`",
                self.name, self.timestamp_key
            )));
        };
        if listed.candidates.is_empty() {
            return Err(Refusal::malformed_signature(format!(
                "{} has no `{}`",
                self.name, self.signature_key
            )));
        }
        Ok(SignatureClaim {
            timestamp: Some(unit.seconds(timestamp)),
            message: SignedMessage::new()
                .owned(format!("{timestamp}."))
                .borrowed(request.body),
            candidates: listed.candidates,
        })
    }

    /// The header value a sender writes at `timestamp` (in the scheme's own
    /// unit): the timestamp item, then one signature item, joined by
    /// `separator` (Stripe-like senders write `","`, WorkOS `", "`). For
    /// signers, tests and load generators.
    pub fn dotted_timestamp_header(
        &self,
        secret: &[u8],
        timestamp: i64,
        body: &[u8],
        separator: &str,
    ) -> String {
        let mac = hmac_sha256(secret, &[format!("{timestamp}.").as_bytes(), body]);
        format!(
            "{}={timestamp}{separator}{}={}",
            self.timestamp_key,
            self.signature_key,
            hex::encode(mac)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Algorithm, Headers, Reason};

    const LIST: SignatureList<'static> = SignatureList {
        name: "X-Sig",
        separator: ',',
        timestamp_key: "t",
        signature_key: "v1",
        algorithm: Algorithm::HmacSha256,
    };

    fn claim(value: &str, unit: TimestampUnit) -> Result<(Option<i64>, Vec<u8>), Reason> {
        let headers: Headers = [("X-Sig", value)].into_iter().collect();
        LIST.dotted_timestamp_claim(&Request::new(&headers, b"{}"), unit)
            .map(|claim| {
                (
                    claim.timestamp,
                    claim.message.parts().flatten().copied().collect(),
                )
            })
            .map_err(|refusal| refusal.reason)
    }

    #[test]
    fn signs_the_timestamp_as_sent_and_reads_its_unit() {
        let sig = "ab".repeat(32);
        assert_eq!(
            claim(
                &format!("t=1700000000123,v1={sig}"),
                TimestampUnit::Milliseconds
            ),
            Ok((Some(1_700_000_000), b"1700000000123.{}".to_vec()))
        );
        assert_eq!(
            claim(&format!("t=1700000000, v1={sig}"), TimestampUnit::Seconds),
            Ok((Some(1_700_000_000), b"1700000000.{}".to_vec()))
        );
    }

    #[test]
    fn refusals() {
        let sig = "ab".repeat(32);
        let seconds = TimestampUnit::Seconds;
        assert_eq!(
            claim(&format!("v1={sig}"), seconds),
            Err(Reason::MalformedSignature)
        );
        assert_eq!(
            claim(&format!("t=1,t=2,v1={sig}"), seconds),
            Err(Reason::MalformedSignature)
        );
        assert_eq!(claim("t=1", seconds), Err(Reason::MalformedSignature));
        assert_eq!(claim("t=1,v1=zz", seconds), Err(Reason::MalformedSignature));
        assert_eq!(
            claim(&format!("t=x,v1={sig}"), seconds),
            Err(Reason::MalformedSignature)
        );
    }
}
