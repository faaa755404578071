//! TLS to the database with rustls (ring provider, as everywhere in the
//! workspace), checking the server's certificate as the URL's `sslmode`
//! asks (see [`SslMode`] for what each mode checks).

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::url::{PostgresUrl, SslMode};

#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("sslrootcert {path}: {reason}")]
    RootCert { path: String, reason: String },
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("TLS verifier: {0}")]
    Verifier(#[from] rustls::client::VerifierBuilderError),
}

/// The TLS connector for `url`'s `sslmode` (unused with `disable`:
/// tokio-postgres then never starts TLS).
pub(crate) fn connector(url: &PostgresUrl) -> Result<MakeRustlsConnect, TlsSetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match (url.ssl_mode(), url.root_cert()) {
        (SslMode::Disable | SslMode::Prefer | SslMode::Require, None) => {
            Arc::new(EncryptionOnly(Arc::clone(&provider)))
        }
        (SslMode::Disable | SslMode::Prefer | SslMode::Require | SslMode::VerifyCa, roots) => {
            Arc::new(ChainOnly(webpki_verifier(roots, &provider)?))
        }
        (SslMode::VerifyFull, roots) => webpki_verifier(roots, &provider)?,
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// rustls's standard verifier (chain and host name) over the CA file, or
/// the Mozilla roots when the URL names none.
fn webpki_verifier(
    root_cert: Option<&Path>,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>, TlsSetupError> {
    let mut roots = RootCertStore::empty();
    match root_cert {
        Some(path) => {
            let root_error = |reason: String| TlsSetupError::RootCert {
                path: path.display().to_string(),
                reason,
            };
            let certificates = CertificateDer::pem_file_iter(path)
                .map_err(|e| root_error(e.to_string()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| root_error(e.to_string()))?;
            if certificates.is_empty() {
                return Err(root_error("no PEM certificate in the file".into()));
            }
            for certificate in certificates {
                roots
                    .add(certificate)
                    .map_err(|e| root_error(e.to_string()))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    Ok(
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider))
            .build()?,
    )
}

/// `verify-ca` (and `require` with a CA file): the chain must lead to a
/// trusted root, but the certificate need not name the host. rustls checks
/// the chain before the name, so a name mismatch means the chain passed.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer`/`require` without a CA file, as libpq does them: the session
/// is encrypted and the handshake's signatures are checked, but any
/// certificate is taken — protection from a passive listener only.
#[derive(Debug)]
struct EncryptionOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for EncryptionOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
