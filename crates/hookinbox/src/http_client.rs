//! The outgoing HTTP/1.1 client: a connection pool over plain TCP for
//! `http://` URLs, or over TLS (rustls on ring, the given trust roots,
//! host names always verified) for `https://` ones. The `http` targets
//! send through it, and reconciliation reads providers' APIs with it.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::Request;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::{Client, ResponseFuture};
use hyper_util::rt::TokioExecutor;

use crate::tls::client::TrustRoots;

/// A pool of connections to one kind of URL.
pub enum HttpClient {
    Plain(Client<HttpConnector, Full<Bytes>>),
    Tls(Client<HttpsConnector<HttpConnector>, Full<Bytes>>),
}

impl HttpClient {
    /// For `http://` URLs; connecting may take `connect_timeout`.
    pub fn plain(connect_timeout: Duration) -> HttpClient {
        HttpClient::Plain(client_builder().build(tcp_connector(connect_timeout)))
    }

    /// For `https://` URLs, verifying servers against `roots` and the
    /// URL's host name.
    pub fn tls(connect_timeout: Duration, roots: TrustRoots) -> Result<HttpClient, rustls::Error> {
        let mut tcp = tcp_connector(connect_timeout);
        // The TLS layer, not the TCP one, decides which schemes pass.
        tcp.enforce_http(false);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(roots.client_config()?)
            .https_only()
            .enable_http1()
            .wrap_connector(tcp);
        Ok(HttpClient::Tls(client_builder().build(connector)))
    }

    pub fn request(&self, request: Request<Full<Bytes>>) -> ResponseFuture {
        match self {
            HttpClient::Plain(client) => client.request(request),
            HttpClient::Tls(client) => client.request(request),
        }
    }
}

fn tcp_connector(timeout: Duration) -> HttpConnector {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_connect_timeout(Some(timeout));
    connector
}

fn client_builder() -> hyper_util::client::legacy::Builder {
    let mut builder = Client::builder(TokioExecutor::new());
    builder.pool_idle_timeout(Duration::from_secs(30));
    builder
}
