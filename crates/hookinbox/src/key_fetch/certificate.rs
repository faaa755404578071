//! A served certificate chain, checked: it must chain to the trust roots
//! (Mozilla's in production) for server use, be valid now and carry one of
//! the names the provider documents; then its public key verifies the
//! request's signature. The leaf is the first certificate of the PEM, the
//! rest are offered as intermediates.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hookinbox_verify::Key;
use rustls::client::danger::ServerCertVerifier;
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::RootCertStore;
use x509_cert::der::{Decode, Encode};

/// A verified certificate's public key and when it stops being valid.
#[derive(Debug, Clone)]
pub struct CheckedKey {
    pub key: Key,
    pub not_after: SystemTime,
}

/// Why a served certificate is not used. The words are fixed: no name from
/// the certificate and no byte of it goes into a log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertificateError {
    #[error("the answer holds no PEM certificate")]
    NoCertificate,
    #[error("the certificate does not chain to the trust roots, is not valid now, or is not for the provider's name")]
    Untrusted,
    #[error("the certificate cannot be read")]
    Unreadable,
    #[error("the certificate's key is not an RSA key")]
    NotRsa,
}

/// Checks the chain in `pem` against `roots` and `names` (one must match) at
/// `now`, and takes the leaf's RSA public key.
pub fn check(
    pem: &[u8],
    roots: &Arc<RootCertStore>,
    names: &[String],
    now: SystemTime,
) -> Result<CheckedKey, CertificateError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|_| CertificateError::NoCertificate)?;
    let (leaf, intermediates) = chain.split_first().ok_or(CertificateError::NoCertificate)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::clone(roots), provider)
        .build()
        .map_err(|_| CertificateError::Untrusted)?;
    let at = UnixTime::since_unix_epoch(now.duration_since(UNIX_EPOCH).unwrap_or_default());
    let trusted = names.iter().any(|name| {
        ServerName::try_from(name.as_str()).is_ok_and(|server_name| {
            verifier
                .verify_server_cert(leaf, intermediates, &server_name, &[], at)
                .is_ok()
        })
    });
    if !trusted {
        return Err(CertificateError::Untrusted);
    }
    let certificate = x509_cert::Certificate::from_der(leaf.as_ref())
        .map_err(|_| CertificateError::Unreadable)?;
    let spki = certificate
        .tbs_certificate
        .subject_public_key_info
        .to_der()
        .map_err(|_| CertificateError::Unreadable)?;
    let key = Key::rsa_from_spki_der(&spki).map_err(|_| CertificateError::NotRsa)?;
    let not_after = UNIX_EPOCH
        + certificate
            .tbs_certificate
            .validity
            .not_after
            .to_unix_duration();
    Ok(CheckedKey { key, not_after })
}

/// How long a checked key is kept: until its certificate expires, and never
/// more than `most` (a provider that replaces a certificate early is
/// followed within that).
pub fn keep_for(not_after: SystemTime, now: SystemTime, most: Duration) -> Duration {
    not_after.duration_since(now).unwrap_or_default().min(most)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../hookinbox-verify/tests/fixtures/key_fetch/pki/"
    );

    fn read(file: &str) -> Vec<u8> {
        std::fs::read(format!("{FIXTURES}{file}")).unwrap()
    }

    fn test_roots() -> Arc<RootCertStore> {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&read("ca.pem")) {
            roots.add(cert.unwrap()).unwrap();
        }
        Arc::new(roots)
    }

    fn names(name: &str) -> Vec<String> {
        vec![name.to_owned()]
    }

    /// 2026-01-01, inside the test certificates' validity (2025–2045).
    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_767_225_600)
    }

    #[test]
    fn a_chain_to_the_roots_for_the_documented_name_gives_its_key() {
        let checked = check(
            &read("paypal.pem"),
            &test_roots(),
            &names("messageverificationcerts.paypal.com"),
            now(),
        )
        .unwrap();
        assert_eq!(checked.key.family(), "rsa");
        let expected = Key::rsa_from_spki_pem(
            &String::from_utf8(
                std::fs::read(format!("{FIXTURES}../../keys/rsa2048_test_only.pub.pem")).unwrap(),
            )
            .unwrap(),
        )
        .unwrap();
        match (&checked.key, &expected) {
            (Key::Rsa(a), Key::Rsa(b)) => assert_eq!(a, b),
            _ => panic!("not RSA"),
        }
        assert_eq!(
            checked.not_after,
            UNIX_EPOCH + Duration::from_secs(2_366_841_600)
        );
    }

    #[test]
    fn other_names_roots_and_times_are_refused() {
        let pem = read("paypal.pem");
        // SNS's name on PayPal's certificate.
        assert_eq!(
            check(&pem, &test_roots(), &names("sns.amazonaws.com"), now()).unwrap_err(),
            CertificateError::Untrusted
        );
        // Mozilla's roots do not know the test CA.
        let mozilla = Arc::new(RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        });
        assert_eq!(
            check(
                &pem,
                &mozilla,
                &names("messageverificationcerts.paypal.com"),
                now()
            )
            .unwrap_err(),
            CertificateError::Untrusted
        );
        // Before its validity.
        assert_eq!(
            check(
                &pem,
                &test_roots(),
                &names("messageverificationcerts.paypal.com"),
                UNIX_EPOCH + Duration::from_secs(1_600_000_000)
            )
            .unwrap_err(),
            CertificateError::Untrusted
        );
        // A CA certificate served in the leaf's place.
        assert_eq!(
            check(
                &read("ca.pem"),
                &test_roots(),
                &names("messageverificationcerts.paypal.com"),
                now()
            )
            .unwrap_err(),
            CertificateError::Untrusted
        );
        assert_eq!(
            check(b"not pem", &test_roots(), &names("x"), now()).unwrap_err(),
            CertificateError::NoCertificate
        );
    }

    #[test]
    fn keys_are_kept_until_expiry_and_at_most_a_day() {
        let day = Duration::from_secs(86_400);
        let now = now();
        assert_eq!(keep_for(now + day * 30, now, day), day);
        assert_eq!(
            keep_for(now + Duration::from_secs(60), now, day),
            Duration::from_secs(60)
        );
        assert_eq!(keep_for(now - day, now, day), Duration::ZERO);
    }
}
