//! The cross-site check of the admin listener: a web page the operator
//! visits must not be able to change anything through it
//! (`docs/architecture.md` §7).
//!
//! The `Host` check ([`super::host_allowlist`]) keeps other sites from
//! *reading* the listener, but a browser still *sends* a form a page
//! submits to `http://127.0.0.1:9090/admin/keys/reload`, and without a
//! token the listener would act on it. So every request that changes
//! something (any method but `GET`, `HEAD` and `OPTIONS`) is checked before
//! the token, for the API and the dashboard alike:
//! - `Sec-Fetch-Site`, where the browser sends it, must be `same-origin`
//!   (or `none`: the user typed or bookmarked it). `same-site` is refused:
//!   another port of the same host (a dev server on 127.0.0.1:3000) is the
//!   same site.
//! - `Origin`, where sent, must name this listener: its host and port are
//!   the request's `Host` (which the `Host` check has admitted). `null`
//!   and every other origin are refused.
//! - On an API route (anything outside the dashboard), a media type a
//!   plain HTML form can send (`application/x-www-form-urlencoded`,
//!   `multipart/form-data`, `text/plain`) is refused, whatever the headers
//!   above say: browsers that send neither header still cannot send JSON
//!   across sites without a CORS preflight, which this listener never
//!   grants. The dashboard's own forms are form-encoded; they carry a CSRF
//!   token instead ([`super::dashboard`]).
//!
//! A request with neither header is not from a browser (curl, the CLI,
//! Prometheus) or from one too old to help; it passes. This is the rule
//! of Go's `http.CrossOriginProtection`, plus the media-type rule.

use axum::http::{header, HeaderMap, Method};

/// Why a request that changes something was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CrossSite {
    /// `Origin` names another origin, or `Sec-Fetch-Site` says the
    /// request comes from another origin (403).
    #[error("cross-site request refused: this listener takes changes only from its own pages or from clients without an Origin")]
    ForeignOrigin,
    /// An API route was sent a media type an HTML form can send (415).
    #[error("content type refused: send JSON (application/json) or no body; a form's media type is refused so that other sites cannot post one")]
    FormMediaType,
}

/// Media types a plain HTML form (or `fetch` without a preflight) sends.
const FORM_MEDIA_TYPES: [&str; 3] = [
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "text/plain",
];

/// Refuses a request that changes something and did not come from this
/// listener's own origin. `api_route` says whether the form media types
/// are refused too (not on the dashboard, whose forms send them).
pub fn check(method: &Method, headers: &HeaderMap, api_route: bool) -> Result<(), CrossSite> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    if let Some(site) = headers.get("sec-fetch-site") {
        let site = site.as_bytes();
        if !site.eq_ignore_ascii_case(b"same-origin") && !site.eq_ignore_ascii_case(b"none") {
            return Err(CrossSite::ForeignOrigin);
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers.get(header::HOST).map(|h| h.as_bytes());
        if !host.is_some_and(|host| origin_is_host(origin.as_bytes(), host)) {
            return Err(CrossSite::ForeignOrigin);
        }
    }
    if api_route && sends_form_media_type(headers) {
        return Err(CrossSite::FormMediaType);
    }
    Ok(())
}

/// Whether `origin` (`scheme://host[:port]`) names `host` (a `Host` value).
/// The scheme is not compared: the listener serves one, and a proxy that
/// terminates TLS before it keeps the `Host` but not the scheme.
fn origin_is_host(origin: &[u8], host: &[u8]) -> bool {
    let Some(start) = origin.windows(3).position(|w| w == b"://") else {
        return false;
    };
    let authority = &origin[start + 3..];
    !authority.is_empty() && authority.eq_ignore_ascii_case(host)
}

fn sends_form_media_type(headers: &HeaderMap) -> bool {
    headers.get_all(header::CONTENT_TYPE).iter().any(|value| {
        let media_type = value
            .as_bytes()
            .split(|b| *b == b';')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        FORM_MEDIA_TYPES
            .iter()
            .any(|form| media_type.eq_ignore_ascii_case(form.as_bytes()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "127.0.0.1:9090";

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HOST.parse().unwrap());
        for (name, value) in pairs {
            headers.append(*name, value.parse().unwrap());
        }
        headers
    }

    fn post(pairs: &[(&'static str, &str)]) -> Result<(), CrossSite> {
        check(&Method::POST, &headers(pairs), true)
    }

    #[test]
    fn requests_that_change_nothing_pass_whatever_they_carry() {
        let foreign = headers(&[
            ("origin", "http://evil.example"),
            ("sec-fetch-site", "cross-site"),
            ("content-type", "text/plain"),
        ]);
        for method in [Method::GET, Method::HEAD, Method::OPTIONS] {
            assert_eq!(check(&method, &foreign, true), Ok(()), "{method}");
        }
        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert_eq!(
                check(&method, &foreign, true),
                Err(CrossSite::ForeignOrigin),
                "{method}"
            );
        }
    }

    #[test]
    fn clients_without_origin_or_fetch_metadata_pass() {
        assert_eq!(post(&[]), Ok(()));
        assert_eq!(post(&[("content-type", "application/json")]), Ok(()));
    }

    #[test]
    fn only_the_listeners_own_origin_passes() {
        assert_eq!(post(&[("origin", "http://127.0.0.1:9090")]), Ok(()));
        assert_eq!(post(&[("origin", "HTTP://127.0.0.1:9090")]), Ok(()));
        for origin in [
            "http://evil.example",
            "http://127.0.0.1:9091",
            "http://127.0.0.1",
            "http://127.0.0.1:9090.evil.example",
            "null",
            "",
        ] {
            assert_eq!(
                post(&[("origin", origin)]),
                Err(CrossSite::ForeignOrigin),
                "{origin:?}"
            );
        }
    }

    #[test]
    fn fetch_metadata_must_say_same_origin_or_none() {
        assert_eq!(post(&[("sec-fetch-site", "same-origin")]), Ok(()));
        assert_eq!(post(&[("sec-fetch-site", "none")]), Ok(()));
        for site in ["same-site", "cross-site", "something-new"] {
            assert_eq!(
                post(&[("sec-fetch-site", site)]),
                Err(CrossSite::ForeignOrigin),
                "{site}"
            );
        }
        // A same-origin claim does not excuse a foreign Origin.
        assert_eq!(
            post(&[
                ("sec-fetch-site", "same-origin"),
                ("origin", "http://evil.example")
            ]),
            Err(CrossSite::ForeignOrigin)
        );
    }

    #[test]
    fn form_media_types_are_refused_on_api_routes_only() {
        for media_type in [
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "text/plain;charset=UTF-8",
            "Text/Plain",
        ] {
            let sent = headers(&[("content-type", media_type)]);
            assert_eq!(
                check(&Method::POST, &sent, true),
                Err(CrossSite::FormMediaType),
                "{media_type}"
            );
            assert_eq!(check(&Method::POST, &sent, false), Ok(()), "{media_type}");
        }
        assert_eq!(
            post(&[("content-type", "application/json; charset=utf-8")]),
            Ok(())
        );
    }
}
