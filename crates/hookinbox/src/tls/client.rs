//! TLS to `https://` targets: which roots a target trusts, and how a failed
//! handshake is described on a delivery row.
//!
//! Verification is always on. A target trusts the Mozilla roots unless it
//! names a `ca_file`; then that file's certificates are its only anchors, so
//! an internal CA cannot be swapped for a public one (or the reverse).
//! rustls runs on the ring provider, chosen explicitly rather than through a
//! process-wide default, so another crate's provider cannot change it.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{CertificateError, ClientConfig, RootCertStore};

use crate::config::ConfigError;

/// The roots a target verifies its server against.
pub enum TrustRoots {
    /// Mozilla's roots (`webpki-roots`).
    Mozilla,
    /// Only the certificates of the target's `ca_file`.
    CaFile(RootCertStore),
}

impl TrustRoots {
    /// Reads a PEM `ca_file` (already resolved against the config file's
    /// directory). `field` names it in errors, which never include the
    /// file's contents.
    pub fn from_ca_file(path: &Path, field: &str) -> Result<TrustRoots, ConfigError> {
        let pem = std::fs::read(path).map_err(|e| {
            ConfigError::invalid(field, format!("cannot read {}: {e}", path.display()))
        })?;
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|_| {
                ConfigError::invalid(field, format!("{} is not a valid PEM file", path.display()))
            })?;
            roots.add(cert).map_err(|_| {
                ConfigError::invalid(
                    field,
                    format!(
                        "{} holds a certificate that cannot be a trust anchor",
                        path.display()
                    ),
                )
            })?;
        }
        if roots.is_empty() {
            return Err(ConfigError::invalid(
                field,
                format!("{} holds no PEM certificate", path.display()),
            ));
        }
        Ok(TrustRoots::CaFile(roots))
    }

    /// A client configuration verifying against these roots, HTTP/1.1 only.
    pub fn client_config(self) -> Result<ClientConfig, rustls::Error> {
        let roots = match self {
            TrustRoots::Mozilla => RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            },
            TrustRoots::CaFile(roots) => roots,
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        Ok(ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth())
    }
}

/// Describes a TLS failure found anywhere in `error`'s source chain, or
/// `None` if it was not one. The words are fixed: rustls' own messages can
/// carry the host name and the names in the certificate, which stay out of
/// the delivery row.
pub fn describe_failure(error: &(dyn std::error::Error + 'static)) -> Option<&'static str> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(tls) = error.downcast_ref::<rustls::Error>() {
            return Some(describe(tls));
        }
        // hyper-rustls and tokio-rustls wrap rustls errors in io::Errors
        // (twice), and io::Error's `source()` skips the error it wraps.
        next = match error.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => error.source(),
        };
    }
    None
}

fn describe(error: &rustls::Error) -> &'static str {
    match error {
        rustls::Error::InvalidCertificate(cert) => match cert {
            CertificateError::UnknownIssuer => "tls certificate error: not issued by a trusted CA",
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                "tls certificate error: not valid for the target's host name"
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "tls certificate error: expired"
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "tls certificate error: not valid yet"
            }
            CertificateError::Revoked => "tls certificate error: revoked",
            _ => "tls certificate error: the target's certificate was rejected",
        },
        rustls::Error::AlertReceived(_) => "tls handshake error: the target sent an alert",
        _ => "tls handshake error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_errors_are_found_inside_io_errors_and_described_without_names() {
        // As hyper-rustls hands it over: io::Error::other(tokio-rustls' io::Error).
        let io = std::io::Error::other(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
        ));
        assert_eq!(
            describe_failure(&io),
            Some("tls certificate error: not issued by a trusted CA")
        );
        let name = rustls::Error::InvalidCertificate(CertificateError::NotValidForName);
        assert_eq!(
            describe_failure(&name),
            Some("tls certificate error: not valid for the target's host name")
        );
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(describe_failure(&refused), None);
    }

    #[test]
    fn ca_file_errors_name_the_field_and_not_the_contents() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        std::fs::write(dir.join("not-a-ca.pem"), "sensitive-looking text\n").unwrap();
        let field = "endpoint[0].target[0].ca_file";
        for file in ["not-a-ca.pem", "missing.pem"] {
            let err = TrustRoots::from_ca_file(&dir.join(file), field)
                .err()
                .unwrap()
                .to_string();
            assert!(err.starts_with(field), "{err}");
            assert!(!err.contains("sensitive"), "{err}");
        }
    }
}
