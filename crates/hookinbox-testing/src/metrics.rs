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

/// The Prometheus text of the admin listener at `admin` (no token).
pub async fn scrape(admin: SocketAddr) -> String {
    let request = hyper::Request::get(format!("http://{admin}/metrics"))
        .body(Full::default())
        .expect("a request");
    let response = client().request(request).await.expect("/metrics answers");
    assert_eq!(response.status(), 200, "/metrics");
    let body = response
        .into_body()
        .collect()
        .await
        .expect("the /metrics body")
        .to_bytes();
    String::from_utf8(body.to_vec()).expect("UTF-8 metrics")
}

/// Every sample of a Prometheus text: series (name and labels, exactly as
/// written) → value.
pub fn samples(text: &str) -> std::collections::BTreeMap<String, f64> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let value = match value {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                other => other.parse().ok()?,
            };
            Some((series.to_owned(), value))
        })
        .collect()
}

/// The metric families a Prometheus text declares (`# TYPE name kind`).
pub fn families(text: &str) -> std::collections::BTreeSet<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}
