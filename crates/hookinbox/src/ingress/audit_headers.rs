//! Which request headers are kept with an event for audit: an allowlist.
//!
//! Kept are the headers that explain a request and nothing else:
//!
//! - the headers its verification read ([`Headers::looked_up`]): the
//!   signature, the signed timestamp, and the event id and type where the
//!   provider sends them in headers (GitHub's `X-GitHub-Delivery`). These
//!   are what `hookinbox verify` needs to check a stored request again
//!   offline, and each adapter declares them by reading them, so there is no
//!   second list per provider to keep in step;
//! - `Content-Type` and `User-Agent`.
//!
//! Everything else is dropped: cookies, proxy and forwarding headers, and any
//! custom header, which may well be a credential (`X-Api-Key`). Credentials
//! are dropped even when verification read them: `Authorization` (checked
//! for an endpoint's `basic_auth`) and GitLab's `X-Gitlab-Token` (the shared
//! secret itself).

use hookinbox_verify::Headers;

/// Kept on every request that has them.
const ALWAYS_KEPT: &[&str] = &["content-type", "user-agent"];

/// Never kept, even when verification read them.
const CREDENTIAL_HEADERS: &[&str] = &["authorization", "cookie", "x-gitlab-token"];

/// The headers of a verified request worth keeping, names lower-cased, in
/// arrival order. Call after verification, on the headers it read.
pub fn audit_headers(headers: &Headers) -> Vec<(String, String)> {
    let read: Vec<(&str, &str)> = headers.looked_up().collect();
    headers
        .iter()
        .filter(|entry| ALWAYS_KEPT.contains(&entry.0) || read.contains(entry))
        .filter(|(name, _)| !is_credential(name))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

fn is_credential(name: &str) -> bool {
    CREDENTIAL_HEADERS.contains(&name) || name.starts_with("proxy-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookinbox_verify::{adapter_for, AdapterSettings, Request, SecretInput, Verifier};

    fn headers(pairs: &[(&str, &str)]) -> Headers {
        pairs.iter().copied().collect()
    }

    fn names(kept: &[(String, String)]) -> Vec<&str> {
        kept.iter().map(|(name, _)| name.as_str()).collect()
    }

    #[test]
    fn only_what_was_read_and_the_media_type_and_agent_are_kept() {
        let headers = headers(&[
            ("Content-Type", "application/json"),
            ("User-Agent", "Provider/1.0"),
            ("X-Signature", "abc"),
            ("X-Api-Key", "k-123"),
            ("X-Custom-Marker", "m"),
            ("X-Forwarded-For", "10.0.0.1"),
            ("Cookie", "session=1"),
        ]);
        let _ = headers.get("x-signature");
        assert_eq!(
            names(&audit_headers(&headers)),
            ["content-type", "user-agent", "x-signature"]
        );
    }

    #[test]
    fn credentials_are_dropped_even_when_read() {
        let headers = headers(&[
            ("X-Gitlab-Token", "secret"),
            ("Authorization", "Basic eDp5"),
            ("Proxy-Authorization", "Basic eDp5"),
            ("X-Gitlab-Event", "Push Hook"),
        ]);
        for (name, _) in headers.iter() {
            let _ = headers.get(name);
        }
        assert_eq!(
            audit_headers(&headers),
            vec![("x-gitlab-event".to_owned(), "Push Hook".to_owned())]
        );
    }

    /// The adapters declare what they read by reading it: after a real
    /// verification, GitHub's signature, delivery id and event type are kept.
    #[test]
    fn a_verified_github_request_keeps_its_signature_and_ids() {
        let secret = "github-test-secret-0123";
        let body = br#"{"zen":"hi"}"#;
        let signature = hookinbox_verify::providers::github::sign(secret, body);
        let headers = headers(&[
            ("Content-Type", "application/json"),
            ("X-Hub-Signature-256", &signature),
            ("X-GitHub-Delivery", "d-1"),
            ("X-GitHub-Event", "ping"),
            ("X-Api-Key", "k-123"),
            ("Authorization", "Bearer t"),
        ]);
        let adapter = adapter_for("github", &AdapterSettings::default()).expect("github");
        let verifier = Verifier::new(
            adapter,
            vec![SecretInput {
                version: "v1".into(),
                value: secret.into(),
                not_before: None,
                not_after: None,
            }],
        )
        .expect("verifier");
        verifier
            .verify(&Request::new(&headers, body), 1_700_000_000)
            .expect("verified");
        let kept = audit_headers(&headers);
        let kept = names(&kept);
        assert!(kept.contains(&"x-hub-signature-256"), "{kept:?}");
        assert!(kept.contains(&"x-github-delivery"), "{kept:?}");
        assert!(kept.contains(&"x-github-event"), "{kept:?}");
        assert!(!kept.contains(&"x-api-key"), "{kept:?}");
        assert!(!kept.contains(&"authorization"), "{kept:?}");
    }
}
