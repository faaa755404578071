//! The public listener's TLS certificate, replaceable while the process
//! runs.
//!
//! Certificates expire and are renewed (ACME every 60–90 days), so a
//! restart must not be the only way to change one: SIGHUP re-reads
//! `[server.tls]`'s files. The certificate lives behind rustls'
//! [`ResolvesServerCert`], asked once per handshake, so a swap changes what
//! new handshakes present while established connections keep their session.
//! A new pair that cannot be used (unreadable, not PEM, key not matching the
//! certificate — for instance while a renewal has written one file and not
//! yet the other) is refused as a whole and the current pair stays.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::config::{self, ConfigError};
use crate::reload::Reloadable;

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

/// Where the pair is read from (resolved against the config file's directory).
#[derive(Debug, Clone)]
pub struct CertificateFiles {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

impl CertificateFiles {
    pub fn from_settings(settings: &config::Tls) -> CertificateFiles {
        CertificateFiles {
            cert_file: settings.cert_file.clone(),
            key_file: settings.key_file.clone(),
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

/// The pair new handshakes present, swapped by [`ReloadableCertificate::try_reload`].
#[derive(Debug)]
pub struct ReloadableCertificate {
    files: CertificateFiles,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
}

impl ReloadableCertificate {
    /// Loads the pair once; start-up fails if it cannot be used.
    pub fn load(
        files: CertificateFiles,
        provider: Arc<CryptoProvider>,
    ) -> Result<ReloadableCertificate, CertificateError> {
        let current = files.load(&provider)?;
        Ok(ReloadableCertificate {
            files,
            provider,
            current: RwLock::new(Arc::new(current)),
        })
    }

    /// Reads the files again; on success new handshakes present the new
    /// pair, on error the current one stays.
    pub fn try_reload(&self) -> Result<(), CertificateError> {
        let fresh = Arc::new(self.files.load(&self.provider)?);
        // A poisoned lock only means a writer panicked mid-assignment of an
        // Arc, which cannot leave it half-written: take it over.
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = fresh;
        Ok(())
    }
}

/// On SIGHUP (`reload.rs`): the new pair for new handshakes, or the
/// current one kept and the error logged with its field.
impl Reloadable for ReloadableCertificate {
    fn reload(&self) {
        match self.try_reload() {
            Ok(()) => tracing::info!(
                message = "TLS certificate reloaded.",
                cert_file = %self.files.cert_file.display()
            ),
            Err(error) => tracing::error!(
                message = "TLS certificate reload failed; keeping the current certificate.",
                field = error.field(),
                %error
            ),
        }
    }
}

impl ResolvesServerCert for ReloadableCertificate {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        Some(Arc::clone(&current))
    }
}
