//! HTTP Basic credentials as the proof of origin, for providers that sign
//! nothing (Chargebee, Postmark): the only thing that tells their requests
//! from anyone else's is the `username:password` the provider was told to
//! send, in the webhook URL (`https://user:password@host/…`) or its own
//! basic-auth fields.
//!
//! Such a provider's configured secret *is* that credential, written
//! `username:password` exactly as given to the provider, so the endpoint
//! cannot start without it and rotates it like any secret (several
//! versions at once). The decoded credentials are presented as a
//! [`Algorithm::Token`] candidate and compared by the verifier in constant
//! time, like GitLab's token: whoever holds them could send any body, which
//! is what [`crate::BodyCoverage::Token`] declares.

use base64::Engine;

use crate::{Algorithm, Candidate, Headers, Refusal};

/// The decoded `username:password` of an `Authorization: Basic …` header.
/// No such header is `missing_signature`; credentials that are not base64
/// are `malformed_signature`.
pub fn candidate(headers: &Headers) -> Result<Candidate, Refusal> {
    let value = headers
        .get_nonempty("authorization")
        .ok_or_else(|| Refusal::missing_signature("no Authorization header (basic credentials)"))?;
    let credentials = value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
        .map(|(_, credentials)| credentials.trim())
        .ok_or_else(|| Refusal::malformed_signature("Authorization is not Basic"))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(credentials)
        .map_err(|_| Refusal::malformed_signature("the Basic credentials are not base64"))?;
    Ok(Candidate::new(Algorithm::Token, decoded))
}

/// The header a sender writes for `username:password`. For tests and load
/// generators.
pub fn header_value(credentials: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(credentials)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Reason;

    fn read(value: Option<&str>) -> Result<Vec<u8>, Reason> {
        let headers: Headers = value.map(|v| ("Authorization", v)).into_iter().collect();
        candidate(&headers)
            .map(|c| c.bytes)
            .map_err(|refusal| refusal.reason)
    }

    #[test]
    fn decodes_basic_credentials() {
        assert_eq!(read(Some(&header_value("u:p"))).unwrap(), b"u:p");
        assert_eq!(read(Some("basic dTpw")).unwrap(), b"u:p");
        assert_eq!(read(None).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            read(Some("Bearer x")).unwrap_err(),
            Reason::MalformedSignature
        );
        assert_eq!(
            read(Some("Basic !!")).unwrap_err(),
            Reason::MalformedSignature
        );
    }
}
