//! `hookinbox_receive_to_delivered_seconds{endpoint,target}`: from the
//! moment ingress read the request to the moment its target had it — what
//! a user waits for end to end, retries included (a replayed event counts
//! from its first arrival). Its buckets reach a day (`recorder`), since a
//! delivery that waited out a target's outage is minutes or hours old.

/// One event delivered to one target.
pub struct DeliveredEndToEnd<'a> {
    pub endpoint: &'a str,
    pub target: &'a str,
    pub received_at_ms: i64,
    pub delivered_at_ms: i64,
}

impl DeliveredEndToEnd<'_> {
    pub const METRIC: &'static str = "hookinbox_receive_to_delivered_seconds";

    pub fn emit(self) {
        let seconds = (self
            .delivered_at_ms
            .saturating_sub(self.received_at_ms)
            .max(0) as f64)
            / 1000.0;
        metrics::histogram!(
            Self::METRIC,
            "endpoint" => self.endpoint.to_owned(), "target" => self.target.to_owned()
        )
        .record(seconds);
    }
}
