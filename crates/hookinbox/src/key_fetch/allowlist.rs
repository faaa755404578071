//! Which certificate URLs a provider's request may name, and the name the
//! certificate must carry (docs/architecture.md §3, "Keys fetched from the
//! provider"). The request chooses its key only among those its provider's
//! own hosts serve and the trust roots vouch for.

use hyper::Uri;

/// Where a key may be fetched from and what its certificate must say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySource {
    /// The `https` URL to fetch, as the request named it.
    pub url: Uri,
    /// DNS names of which the certificate must be valid for one.
    pub certificate_names: Vec<String>,
}

/// Why a URL is not fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAllowed {
    #[error("the certificate URL is not a valid URL")]
    Invalid,
    #[error("the certificate URL is not https")]
    NotHttps,
    #[error("the certificate URL carries a user, a port or a query")]
    Extras,
    #[error("the certificate URL's host is not one of {provider}'s")]
    Host { provider: &'static str },
    #[error("the certificate URL's path is not where {provider} serves certificates")]
    Path { provider: &'static str },
    #[error("provider `{0}` fetches no such key")]
    Provider(String),
    #[error("the key id is not a plain identifier")]
    KeyId,
}

/// PayPal's API hosts, live and sandbox, which serve its certificates under
/// `/v1/notifications/certs/`.
const PAYPAL_HOSTS: &[&str] = &[
    "api.paypal.com",
    "api-m.paypal.com",
    "api.sandbox.paypal.com",
    "api-m.sandbox.paypal.com",
];
const PAYPAL_CERT_PATH: &str = "/v1/notifications/certs/";
/// The name on PayPal's message-verification certificate.
const PAYPAL_CERT_NAME: &str = "messageverificationcerts.paypal.com";
/// The name on Amazon SNS's signing certificate.
const SNS_CERT_NAME: &str = "sns.amazonaws.com";

/// The source of the certificate `url` for `provider`, or why it is not one.
pub fn certificate_source(provider: &str, url: &str) -> Result<KeySource, NotAllowed> {
    let uri: Uri = url.parse().map_err(|_| NotAllowed::Invalid)?;
    if uri.scheme_str() != Some("https") {
        return Err(NotAllowed::NotHttps);
    }
    let authority = uri.authority().ok_or(NotAllowed::Invalid)?;
    if authority.as_str().contains('@') || authority.port().is_some() || uri.query().is_some() {
        return Err(NotAllowed::Extras);
    }
    let host = authority.host().to_ascii_lowercase();
    let path = uri.path();
    let certificate_names = match provider {
        "paypal" => {
            if !PAYPAL_HOSTS.contains(&host.as_str()) {
                return Err(NotAllowed::Host { provider: "paypal" });
            }
            if !path.starts_with(PAYPAL_CERT_PATH) || path.len() == PAYPAL_CERT_PATH.len() {
                return Err(NotAllowed::Path { provider: "paypal" });
            }
            vec![PAYPAL_CERT_NAME.to_owned()]
        }
        "aws_sns" => {
            if !is_sns_host(&host) {
                return Err(NotAllowed::Host {
                    provider: "aws_sns",
                });
            }
            if !path.ends_with(".pem") || path.contains("/../") {
                return Err(NotAllowed::Path {
                    provider: "aws_sns",
                });
            }
            // SNS's certificate names `sns.amazonaws.com`; one valid for
            // the regional host it came from is SNS's too.
            vec![SNS_CERT_NAME.to_owned(), host.clone()]
        }
        other => return Err(NotAllowed::Provider(other.to_owned())),
    };
    Ok(KeySource {
        url: uri,
        certificate_names,
    })
}

/// `sns.<region>.amazonaws.com` (or `.amazonaws.com.cn` in China), the
/// region being lower-case letters, digits and dashes.
fn is_sns_host(host: &str) -> bool {
    let Some(rest) = host.strip_prefix("sns.") else {
        return false;
    };
    let region = rest
        .strip_suffix(".amazonaws.com")
        .or_else(|| rest.strip_suffix(".amazonaws.com.cn"));
    region.is_some_and(|region| {
        !region.is_empty()
            && region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paypal_certificates_come_from_paypal_hosts_only() {
        let ok = certificate_source(
            "paypal",
            "https://api.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-1d93a270",
        )
        .unwrap();
        assert_eq!(
            ok.certificate_names,
            ["messageverificationcerts.paypal.com"]
        );
        assert!(certificate_source(
            "paypal",
            "https://api-m.sandbox.paypal.com/v1/notifications/certs/CERT-1"
        )
        .is_ok());
        for (url, why) in [
            (
                "http://api.paypal.com/v1/notifications/certs/CERT-1",
                NotAllowed::NotHttps,
            ),
            (
                "https://evil.example/v1/notifications/certs/CERT-1",
                NotAllowed::Host { provider: "paypal" },
            ),
            (
                "https://api.paypal.com.evil.example/v1/notifications/certs/CERT-1",
                NotAllowed::Host { provider: "paypal" },
            ),
            (
                "https://api.paypal.com:8443/v1/notifications/certs/CERT-1",
                NotAllowed::Extras,
            ),
            (
                "https://x@api.paypal.com/v1/notifications/certs/CERT-1",
                NotAllowed::Extras,
            ),
            (
                "https://api.paypal.com/v1/notifications/certs/CERT-1?a=b",
                NotAllowed::Extras,
            ),
            (
                "https://api.paypal.com/v1/oauth2/token",
                NotAllowed::Path { provider: "paypal" },
            ),
            (
                "https://api.paypal.com/v1/notifications/certs/",
                NotAllowed::Path { provider: "paypal" },
            ),
            ("not a url", NotAllowed::Invalid),
        ] {
            assert_eq!(certificate_source("paypal", url).unwrap_err(), why, "{url}");
        }
    }

    #[test]
    fn sns_certificates_come_from_regional_sns_hosts_only() {
        let ok = certificate_source(
            "aws_sns",
            "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem",
        )
        .unwrap();
        assert_eq!(
            ok.certificate_names,
            ["sns.amazonaws.com", "sns.us-west-2.amazonaws.com"]
        );
        assert!(
            certificate_source("aws_sns", "https://sns.cn-north-1.amazonaws.com.cn/x.pem").is_ok()
        );
        for url in [
            "https://sns.amazonaws.com/x.pem",
            "https://sns..amazonaws.com/x.pem",
            "https://sns.us-east-1.amazonaws.com.evil.example/x.pem",
            "https://evil.example/sns.us-east-1.amazonaws.com/x.pem",
            "https://s3.us-east-1.amazonaws.com/x.pem",
            "https://sns.US_EAST.amazonaws.com/x.pem",
        ] {
            assert!(
                matches!(
                    certificate_source("aws_sns", url),
                    Err(NotAllowed::Host { .. } | NotAllowed::Invalid)
                ),
                "{url}"
            );
        }
        assert_eq!(
            certificate_source("aws_sns", "https://sns.us-east-1.amazonaws.com/x.txt").unwrap_err(),
            NotAllowed::Path {
                provider: "aws_sns"
            }
        );
        assert_eq!(
            certificate_source("stripe", "https://sns.us-east-1.amazonaws.com/x.pem").unwrap_err(),
            NotAllowed::Provider("stripe".into())
        );
    }
}
