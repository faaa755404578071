//! The admin listener's event stream, as `listen` opens it:
//! `GET /admin/endpoints/{endpoint}/stream` with the admin token, from a
//! cursor, a time or now (`admin/api/stream.rs`).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, StatusCode, Uri};
use secrecy::{ExposeSecret, SecretString};

use super::error::ListenError;
use crate::http_client::HttpClient;

/// How long the admin listener may take to answer the request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Where the stream starts.
#[derive(Debug, Clone)]
pub enum Start {
    After(String),
    Since(String),
    Now,
}

/// Why a stream could not be opened.
pub enum OpenError {
    /// Opening again will not help (a wrong token, no such endpoint).
    Fatal(ListenError),
    /// The listener is down or failed: open again later.
    Retry(String),
}

pub struct AdminStream {
    client: HttpClient,
    /// `scheme://authority/path/of/the/stream`.
    stream_url: String,
    token: Option<SecretString>,
    endpoint: String,
}

impl AdminStream {
    pub fn new(
        client: HttpClient,
        admin: &str,
        endpoint: &str,
        token: Option<SecretString>,
    ) -> AdminStream {
        let endpoint_segment: String =
            form_urlencoded::byte_serialize(endpoint.as_bytes()).collect();
        AdminStream {
            client,
            stream_url: format!(
                "{}/admin/endpoints/{}/stream",
                admin.trim_end_matches('/'),
                endpoint_segment.replace('+', "%20")
            ),
            token,
            endpoint: endpoint.to_owned(),
        }
    }

    /// Opens the stream; the body carries its events.
    pub async fn open(&self, start: &Start) -> Result<Incoming, OpenError> {
        let query = match start {
            Start::After(cursor) => format!("?after={}", encode(cursor)),
            Start::Since(time) => format!("?since={}", encode(time)),
            Start::Now => String::new(),
        };
        let uri: Uri = format!("{}{query}", self.stream_url)
            .parse()
            .map_err(|_| OpenError::Fatal(ListenError::AdminUrl("not a URL".into())))?;
        let mut request = Request::get(uri).header("accept", "text/event-stream");
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {}", token.expose_secret()));
        }
        let request = request.body(Full::new(Bytes::new())).map_err(|_| {
            OpenError::Fatal(ListenError::TokenMissing("(not a header value)".into()))
        })?;
        let response =
            match tokio::time::timeout(CONNECT_TIMEOUT, self.client.request(request)).await {
                Err(_) => return Err(OpenError::Retry("the admin listener did not answer".into())),
                Ok(Err(error)) => return Err(OpenError::Retry(format!("admin listener: {error}"))),
                Ok(Ok(response)) => response,
            };
        let status = response.status();
        if status == StatusCode::OK {
            return Ok(response.into_body());
        }
        let body = http_body_util::Limited::new(response.into_body(), 4096)
            .collect()
            .await
            .map(|collected| String::from_utf8_lossy(&collected.to_bytes()).into_owned())
            .unwrap_or_default();
        Err(match status {
            StatusCode::UNAUTHORIZED => OpenError::Fatal(ListenError::Unauthorized),
            StatusCode::NOT_FOUND => {
                OpenError::Fatal(ListenError::NoSuchEndpoint(self.endpoint.clone()))
            }
            status if status.is_client_error() && status != StatusCode::TOO_MANY_REQUESTS => {
                OpenError::Fatal(ListenError::Refused {
                    status: status.as_u16(),
                    body,
                })
            }
            status => OpenError::Retry(format!("admin listener answered {status}")),
        })
    }
}

fn encode(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}
