//! Reading the admin listener's Prometheus metrics.

use std::net::SocketAddr;

use http_body_util::{BodyExt, Full};

use crate::http::client;

/// The sum of every series of the metric `name` on the admin listener at
/// `admin` (no token), or `None` when the metric is not exported.
pub async fn metric_value(admin: SocketAddr, name: &str) -> Option<f64> {
    let request = hyper::Request::get(format!("http://{admin}/metrics"))
        .body(Full::default())
        .ok()?;
    let response = client().request(request).await.ok()?;
    let text = response.into_body().collect().await.ok()?.to_bytes();
    let mut found = None;
    for line in String::from_utf8_lossy(&text).lines() {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        if !(rest.starts_with(' ') || rest.starts_with('{')) {
            continue;
        }
        let value: f64 = rest.rsplit(' ').next()?.parse().ok()?;
        *found.get_or_insert(0.0) += value;
    }
    found
}
