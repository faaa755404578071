//! The exporter's HTTP client: our own hyper client (rustls on ring, Mozilla
//! roots), so OTLP adds no second HTTP stack, no openssl.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use opentelemetry_http::{HttpClient, HttpError, Request, Response};

use crate::http_client::HttpClient as Pool;
use crate::tls::client::TrustRoots;

/// Longest one export may take, connection included.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

pub struct ExportClient {
    plain: Pool,
    tls: Option<Pool>,
}

impl std::fmt::Debug for ExportClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExportClient")
    }
}

impl ExportClient {
    pub fn new() -> ExportClient {
        ExportClient {
            plain: Pool::plain(CONNECT_TIMEOUT),
            tls: Pool::tls(CONNECT_TIMEOUT, TrustRoots::Mozilla).ok(),
        }
    }
}

#[async_trait::async_trait]
impl HttpClient for ExportClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let pool = match request.uri().scheme_str() {
            Some("https") => self.tls.as_ref().ok_or("no TLS client")?,
            _ => &self.plain,
        };
        let request = request.map(Full::new);
        let exchange = async {
            let response = pool.request(request).await?;
            let (parts, body) = response.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok::<_, HttpError>(Response::from_parts(parts, body))
        };
        let response = tokio::time::timeout(EXPORT_TIMEOUT, exchange)
            .await
            .map_err(|_| "OTLP export timed out")??;
        if !response.status().is_success() {
            return Err(format!("collector answered {}", response.status()).into());
        }
        Ok(response)
    }
}
