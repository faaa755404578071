//! The HTTPS client of key fetching: a GET or a JSON POST, rustls on ring against the
//! trust roots (Mozilla's, or a test override's), HTTP/1.1, a bounded
//! answer. Apart from the targets' client (`crate::http_client`) because
//! its address resolution can be pointed at a test server, and nothing else
//! in the process should ever be.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Request, StatusCode, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rustls::{ClientConfig, RootCertStore};

/// The largest answer read: a certificate chain is a few KiB.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a GET did not produce a body.
#[derive(Debug, thiserror::Error)]
pub enum GetError {
    #[error("the request failed: {0}")]
    Request(String),
    #[error("answered {0}")]
    Status(StatusCode),
    #[error("the answer is larger than {MAX_ANSWER_BYTES} bytes or broke off")]
    Body,
}

/// Resolves host names through the system, or every name to one address
/// (the test override).
#[derive(Debug, Clone)]
pub enum Resolver {
    System,
    Fixed(SocketAddr),
}

type Addresses = std::vec::IntoIter<SocketAddr>;

impl tower::Service<Name> for Resolver {
    type Response = Addresses;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Addresses, std::io::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        match self {
            Resolver::Fixed(address) => {
                let address = *address;
                Box::pin(async move { Ok(vec![address].into_iter()) })
            }
            Resolver::System => Box::pin(async move {
                // Port 0: the connector puts the URL's port in.
                let found = tokio::net::lookup_host((name.as_str(), 0)).await?;
                Ok(found.collect::<Vec<_>>().into_iter())
            }),
        }
    }
}

/// A pool of HTTPS connections for key fetches.
pub struct HttpsClient {
    client: Client<HttpsConnector<HttpConnector<Resolver>>, Full<Bytes>>,
}

impl HttpsClient {
    pub fn new(roots: RootCertStore, resolver: Resolver) -> Result<HttpsClient, rustls::Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut tcp = HttpConnector::new_with_resolver(resolver);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(CONNECT_TIMEOUT));
        tcp.enforce_http(false);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_only()
            .enable_http1()
            .wrap_connector(tcp);
        let mut builder = Client::builder(TokioExecutor::new());
        builder.pool_idle_timeout(Duration::from_secs(30));
        Ok(HttpsClient {
            client: builder.build(connector),
        })
    }

    /// GETs `url`: the body of a 200, at most [`MAX_ANSWER_BYTES`]. No
    /// redirect is followed (a redirect could leave the allowlist). The
    /// caller bounds the time.
    pub async fn get(&self, url: &Uri) -> Result<Bytes, GetError> {
        let request = Request::get(url.clone())
            .header(hyper::header::USER_AGENT, "hookinbox")
            .body(Full::default())
            .map_err(|e| GetError::Request(e.to_string()))?;
        self.send(request).await
    }

    /// POSTs the JSON `body` to `url`, as [`HttpsClient::get`].
    pub async fn post_json(&self, url: &Uri, body: Vec<u8>) -> Result<Bytes, GetError> {
        let request = Request::post(url.clone())
            .header(hyper::header::USER_AGENT, "hookinbox")
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| GetError::Request(e.to_string()))?;
        self.send(request).await
    }

    async fn send(&self, request: Request<Full<Bytes>>) -> Result<Bytes, GetError> {
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| GetError::Request(describe(&e)))?;
        if response.status() != StatusCode::OK {
            return Err(GetError::Status(response.status()));
        }
        Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map(|collected| collected.to_bytes())
            .map_err(|_| GetError::Body)
    }
}

/// A connection failure in fixed words where it is a TLS one (rustls'
/// own messages can carry names from the certificate).
fn describe(error: &hyper_util::client::legacy::Error) -> String {
    crate::tls::client::describe_failure(error)
        .map(str::to_owned)
        .unwrap_or_else(|| {
            if error.is_connect() {
                "cannot connect".to_owned()
            } else {
                "the connection failed".to_owned()
            }
        })
}
