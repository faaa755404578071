//! The Prometheus recorder behind the admin listener's `/metrics`.

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Renders the current metrics in the Prometheus text format.
#[derive(Clone)]
pub struct MetricsHandle(PrometheusHandle);

impl MetricsHandle {
    pub fn render(&self) -> String {
        self.0.render()
    }
}

/// Latency buckets in seconds: sub-millisecond acks up to slow deliveries.
const SECONDS_BUCKETS: &[f64] = &[
    0.000_5, 0.001, 0.002, 0.005, 0.010, 0.015, 0.025, 0.050, 0.100, 0.250, 0.5, 1.0, 2.5, 5.0,
    10.0,
];

/// Buckets of the receive-to-delivered histogram, in seconds: an attempt
/// that succeeds at once (milliseconds) up to one that waited a day of
/// retries.
const END_TO_END_BUCKETS: &[f64] = &[
    0.005, 0.010, 0.025, 0.050, 0.100, 0.250, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0,
    3600.0, 21_600.0, 86_400.0,
];

/// Installs the process-wide recorder; `None` if one is already installed.
/// The build's `hookinbox_build_info` is recorded with it.
pub fn install() -> Option<MetricsHandle> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
        .ok()?
        // A full name is matched before any suffix.
        .set_buckets_for_metric(
            Matcher::Full(super::DeliveredEndToEnd::METRIC.into()),
            END_TO_END_BUCKETS,
        )
        .ok()?
        .install_recorder()
        .ok()
        .map(MetricsHandle)?;
    super::BuildInfo.emit();
    Some(handle)
}
