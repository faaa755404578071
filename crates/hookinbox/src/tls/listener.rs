//! TLS on the public listener (`[server.tls]`), for deployments without a
//! terminating proxy: rustls on the ring provider, the certificate from
//! [`ReloadableCertificate`], and a deadline on every handshake — a client
//! that opens a connection and then trickles its ClientHello holds a
//! connection slot exactly like a slow request head does.
//!
//! HTTP/1.1 only, announced through ALPN. HTTP/2 would bring in the `h2`
//! crate and, more to the point, a second set of limits to get right on a
//! public port (concurrent streams, header-list size, reset floods,
//! keep-alive pings) next to the HTTP/1 ones the ingress already enforces;
//! a provider sends one request per delivery, which HTTP/2 does not speed up.
//!
//! The handshake runs in the connection's own task (see
//! [`crate::server::serve`]), never in the accept loop, so a slow one delays
//! nobody else.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use super::certificate::{CertificateFiles, ReloadableCertificate};
use crate::config::{self, ConfigError};
use crate::reload::Reloadable;

/// Why a connection ended before its handshake completed.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("TLS handshake not finished within {0:?}")]
    Timeout(Duration),
    #[error("TLS handshake failed: {0}")]
    Failed(#[from] std::io::Error),
}

/// Accepts TLS on connections the public listener accepted. Cheap to clone.
#[derive(Clone)]
pub struct TlsListener {
    acceptor: tokio_rustls::TlsAcceptor,
    certificate: Arc<ReloadableCertificate>,
    handshake_timeout: Duration,
}

impl TlsListener {
    /// Reads `[server.tls]`'s files; errors name the field. SIGHUP reloads
    /// them once [`Self::certificate`] is handed to `reload_on_sighup`.
    pub fn build(settings: &config::Tls) -> Result<TlsListener, ConfigError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let files = CertificateFiles::from_settings(settings);
        let certificate = Arc::new(ReloadableCertificate::load(files, Arc::clone(&provider))?);
        let mut server_config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ConfigError::invalid("server.tls", e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(&certificate) as _);
        server_config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsListener {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server_config)),
            certificate,
            handshake_timeout: settings.handshake_timeout,
        })
    }

    /// The certificate new handshakes present, which a SIGHUP re-reads.
    pub fn certificate(&self) -> Arc<dyn Reloadable> {
        Arc::clone(&self.certificate) as Arc<dyn Reloadable>
    }

    /// Runs the server side of the handshake, within the deadline.
    pub async fn handshake(&self, tcp: TcpStream) -> Result<TlsStream<TcpStream>, HandshakeError> {
        match tokio::time::timeout(self.handshake_timeout, self.acceptor.accept(tcp)).await {
            Ok(Ok(tls)) => Ok(tls),
            Ok(Err(error)) => Err(HandshakeError::Failed(error)),
            Err(_) => Err(HandshakeError::Timeout(self.handshake_timeout)),
        }
    }
}
