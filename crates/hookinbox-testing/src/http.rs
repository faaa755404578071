//! A plain HTTP/1.1 client and the answers it gets.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::signed::Signed;

/// A plain HTTP/1.1 client.
pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(5))
        .build_http()
}

/// The answer to one request.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    /// The `error` of a refusal's JSON body.
    pub fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or_default().to_owned()
    }
}

/// Sends `signed` with `method` to `url`; the answer, or why there was none.
pub async fn send(
    client: &HttpClient,
    method: &str,
    url: &str,
    signed: &Signed,
) -> Result<Answer, String> {
    let mut request = hyper::Request::builder().method(method).uri(url);
    for (name, value) in &signed.headers {
        request = request.header(name, value);
    }
    let request = request
        .body(Full::new(signed.body.clone()))
        .map_err(|e| e.to_string())?;
    let response = client.request(request).await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok(Answer {
        status,
        headers,
        body,
    })
}

/// POSTs `signed` to `url`; panics when no answer comes.
pub async fn post(client: &HttpClient, url: &str, signed: &Signed) -> Answer {
    send(client, "POST", url, signed)
        .await
        .expect("request failed")
}

/// Sends `signed` again, as a provider retries, until it is answered 200
/// (returned) or `give_up_after` passes; any answer other than 503 on the
/// way fails the test.
pub async fn retry_until_accepted(
    client: &HttpClient,
    url: &str,
    signed: &Signed,
    give_up_after: Duration,
) -> Answer {
    let give_up = Instant::now() + give_up_after;
    loop {
        let answer = post(client, url, signed).await;
        match answer.status {
            200 => return answer,
            503 if Instant::now() < give_up => {
                // A provider's retry interval, shortened.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("retry answered {other}: {:?}", answer.body),
        }
    }
}
