//! The test-only override of key fetching: tests run a key server of their
//! own under a test CA, and point the fetches at it with two environment
//! variables, both required together:
//!
//! - `HOOKINBOX_TEST_KEY_FETCH_CA`: a PEM file whose certificates become the
//!   only trust roots, for the key server's TLS and the served certificates.
//! - `HOOKINBOX_TEST_KEY_FETCH_CONNECT`: `ip:port` every key fetch connects
//!   to, whatever the URL's host (the URL, its host name, the TLS name check
//!   and the allowlist stay exactly as in production).
//!
//! Why the environment and not the configuration: a configuration file is
//! what operators copy between machines, and the override must never ride
//! along into production. The allowlist itself cannot be overridden at all.
//! When the override is set the service says so at start, as a warning.

use std::net::SocketAddr;
use std::path::PathBuf;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;

pub const CA_VARIABLE: &str = "HOOKINBOX_TEST_KEY_FETCH_CA";
pub const CONNECT_VARIABLE: &str = "HOOKINBOX_TEST_KEY_FETCH_CONNECT";

/// Trust roots and an address for every key fetch, for tests.
#[derive(Debug, Clone)]
pub struct TestOverride {
    pub roots: RootCertStore,
    pub connect: SocketAddr,
}

/// Why the override could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OverrideError {
    #[error("{CA_VARIABLE} and {CONNECT_VARIABLE} go together; only one is set")]
    OnlyOne,
    #[error("{CONNECT_VARIABLE} is not ip:port")]
    Connect,
    #[error("{CA_VARIABLE}: cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{CA_VARIABLE}: {0} holds no usable PEM certificate")]
    Certificates(PathBuf),
}

impl TestOverride {
    /// The override from the environment, `Ok(None)` when neither variable is set.
    pub fn from_environment() -> Result<Option<TestOverride>, OverrideError> {
        let ca = std::env::var_os(CA_VARIABLE);
        let connect = std::env::var(CONNECT_VARIABLE).ok();
        let (ca, connect) = match (ca, connect) {
            (None, None) => return Ok(None),
            (Some(ca), Some(connect)) => (PathBuf::from(ca), connect),
            _ => return Err(OverrideError::OnlyOne),
        };
        let connect: SocketAddr = connect.trim().parse().map_err(|_| OverrideError::Connect)?;
        let pem = std::fs::read(&ca).map_err(|source| OverrideError::Read {
            path: ca.clone(),
            source,
        })?;
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|_| OverrideError::Certificates(ca.clone()))?;
            roots
                .add(cert)
                .map_err(|_| OverrideError::Certificates(ca.clone()))?;
        }
        if roots.is_empty() {
            return Err(OverrideError::Certificates(ca));
        }
        Ok(Some(TestOverride { roots, connect }))
    }
}
