//! A TLS-terminating TCP proxy on 127.0.0.1 in front of a plain broker
//! (RabbitMQ on 5672, Mosquitto on 1883): a client speaks TLS to it with
//! a certificate of a [`TestPki`], and it forwards the decrypted bytes to
//! the real broker. So an `amqps://` or `mqtts://` target is tested
//! against a real broker, through a real handshake, without a broker of
//! its own configured for TLS.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::TestPki;

/// Stops accepting when dropped.
pub struct TlsProxy {
    pub addr: SocketAddr,
    handshakes: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl TlsProxy {
    /// Terminates TLS with `pki`'s server certificate and forwards each
    /// connection to `upstream` (host:port).
    pub async fn start(pki: &TestPki, upstream: String) -> TlsProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = TlsAcceptor::from(Arc::clone(&pki.server_config));
        let handshakes = Arc::new(AtomicUsize::new(0));
        let refused = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn({
            let handshakes = Arc::clone(&handshakes);
            let refused = Arc::clone(&refused);
            async move {
                loop {
                    let Ok((client, _)) = listener.accept().await else {
                        return;
                    };
                    let acceptor = acceptor.clone();
                    let upstream = upstream.clone();
                    let handshakes = Arc::clone(&handshakes);
                    let refused = Arc::clone(&refused);
                    tokio::spawn(async move {
                        let mut client = match acceptor.accept(client).await {
                            Ok(client) => client,
                            Err(_) => {
                                refused.fetch_add(1, Ordering::SeqCst);
                                return;
                            }
                        };
                        handshakes.fetch_add(1, Ordering::SeqCst);
                        if let Ok(mut server) = TcpStream::connect(&upstream).await {
                            let _closed =
                                tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        }
                    });
                }
            }
        });
        TlsProxy {
            addr,
            handshakes,
            refused,
            task,
        }
    }

    /// TLS handshakes completed so far: connections that reached the broker.
    pub fn handshakes(&self) -> usize {
        self.handshakes.load(Ordering::SeqCst)
    }

    /// Connections whose TLS handshake failed (the client refused the
    /// certificate, or spoke no TLS).
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
