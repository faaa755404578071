//! Which request headers are kept with an event for audit. Signature headers
//! are MACs or public-key signatures and safe to keep; credentials are not.

/// Headers never stored: they carry credentials (GitLab sends its shared
/// secret itself in `X-Gitlab-Token`).
const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-gitlab-token",
];

/// The headers of a verified request worth keeping, names lower-cased.
pub fn audit_headers(headers: &hookinbox_verify::Headers) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(name, _)| !CREDENTIAL_HEADERS.contains(name))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_dropped() {
        let headers: hookinbox_verify::Headers = [
            ("X-Gitlab-Token", "secret"),
            ("Authorization", "Bearer x"),
            ("X-Gitlab-Event", "Push Hook"),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            audit_headers(&headers),
            vec![("x-gitlab-event".to_owned(), "Push Hook".to_owned())]
        );
    }
}
