//! The public listener's TLS certificate: `[server.tls]`'s PEM files, read
//! and checked (the key must belong to the certificate) before anything
//! listens. The pair lives behind rustls' [`ResolvesServerCert`], asked once
//! per handshake.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::config::{ConfigError, TlsConfig};

/// Why a certificate/key pair cannot be used. Messages give the path,
/// never the files' contents; [`CertificateError::field`] names the field.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        field: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} holds no PEM certificate", path.display())]
    NoCertificate { path: PathBuf },
    #[error("{} holds no PEM private key (PKCS#8, PKCS#1 or SEC1)", path.display())]
    NoKey { path: PathBuf },
    #[error("{} cannot be used with the certificate in {}: {reason}", key.display(), cert.display())]
    Unusable {
        cert: PathBuf,
        key: PathBuf,
        reason: String,
    },
}

impl CertificateError {
    /// The `[server.tls]` field at fault.
    pub fn field(&self) -> &'static str {
        match self {
            CertificateError::Read { field, .. } => field,
            CertificateError::NoCertificate { .. } => "server.tls.cert_file",
            CertificateError::NoKey { .. } | CertificateError::Unusable { .. } => {
                "server.tls.key_file"
            }
        }
    }
}

impl From<CertificateError> for ConfigError {
    fn from(error: CertificateError) -> Self {
        ConfigError::invalid(error.field(), error.to_string())
    }
}

/// Where the pair is read from, resolved against the config file's directory.
#[derive(Debug, Clone)]
pub struct CertificateFiles {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

impl CertificateFiles {
    pub fn from_config(config: &TlsConfig, base_dir: &Path) -> CertificateFiles {
        CertificateFiles {
            cert_file: base_dir.join(&config.cert_file),
            key_file: base_dir.join(&config.key_file),
        }
    }

    /// Reads and checks the pair: the chain, the key, and that the key
    /// belongs to the chain's first certificate.
    pub fn load(&self, provider: &CryptoProvider) -> Result<CertifiedKey, CertificateError> {
        let cert_pem = read(&self.cert_file, "server.tls.cert_file")?;
        let chain = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .ok()
            .filter(|chain| !chain.is_empty())
            .ok_or_else(|| CertificateError::NoCertificate {
                path: self.cert_file.clone(),
            })?;
        let key_pem = read(&self.key_file, "server.tls.key_file")?;
        let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| CertificateError::NoKey {
            path: self.key_file.clone(),
        })?;
        CertifiedKey::from_der(chain, key, provider).map_err(|error| CertificateError::Unusable {
            cert: self.cert_file.clone(),
            key: self.key_file.clone(),
            reason: error.to_string(),
        })
    }
}

fn read(path: &Path, field: &'static str) -> Result<Vec<u8>, CertificateError> {
    std::fs::read(path).map_err(|source| CertificateError::Read {
        field,
        path: path.to_owned(),
        source,
    })
}

/// The pair new handshakes present.
#[derive(Debug)]
pub struct ServerCertificate {
    current: RwLock<Arc<CertifiedKey>>,
}

impl ServerCertificate {
    /// Loads the pair once; start-up fails if it cannot be used.
    pub fn load(
        files: CertificateFiles,
        provider: Arc<CryptoProvider>,
    ) -> Result<ServerCertificate, CertificateError> {
        let current = files.load(&provider)?;
        Ok(ServerCertificate {
            current: RwLock::new(Arc::new(current)),
        })
    }
}

impl ResolvesServerCert for ServerCertificate {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        Some(Arc::clone(&current))
    }
}
