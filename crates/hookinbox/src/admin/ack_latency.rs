//! The ack p99 the overview shows, read from this process's own
//! `hookinbox_ack_duration_seconds` histogram (the Prometheus text that
//! `/metrics` serves): acknowledgements of accepted and duplicate events,
//! every endpoint, since the process started. The store does not know ack
//! times, and another process's are in its own `/metrics` (Grafana has
//! them all).

use serde::Serialize;

const BUCKET_PREFIX: &str = "hookinbox_ack_duration_seconds_bucket{";

/// The 99th percentile of acknowledgement times, as histogram buckets give
/// it: the upper bound of the bucket it falls in.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct AckP99 {
    /// Seconds; `None` when the percentile is above the largest bucket.
    pub upper_bound_seconds: Option<f64>,
    /// Acknowledgements counted.
    pub samples: u64,
}

/// From the rendered metrics; `None` before the first acknowledgement.
pub fn ack_p99(rendered: &str) -> Option<AckP99> {
    // (upper bound, cumulative count) summed over the label sets.
    let mut buckets: Vec<(f64, u64)> = Vec::new();
    for line in rendered.lines() {
        let Some(rest) = line.strip_prefix(BUCKET_PREFIX) else {
            continue;
        };
        let Some((labels, count)) = rest.rsplit_once("} ") else {
            continue;
        };
        let committed =
            labels.contains("outcome=\"accepted\"") || labels.contains("outcome=\"duplicate\"");
        let Some(bound) = labels
            .split("le=\"")
            .nth(1)
            .and_then(|value| value.split('"').next())
        else {
            continue;
        };
        let (Ok(bound), Ok(count)) = (parse_bound(bound), count.trim().parse::<f64>()) else {
            continue;
        };
        if !committed {
            continue;
        }
        match buckets.iter_mut().find(|(b, _)| *b == bound) {
            Some((_, total)) => *total += count as u64,
            None => buckets.push((bound, count as u64)),
        }
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let samples = buckets.last()?.1;
    if samples == 0 {
        return None;
    }
    let wanted = (samples as f64 * 0.99).ceil() as u64;
    let bound = buckets
        .iter()
        .find(|(_, count)| *count >= wanted)
        .map(|(bound, _)| *bound)
        .filter(|bound| bound.is_finite());
    Some(AckP99 {
        upper_bound_seconds: bound,
        samples,
    })
}

fn parse_bound(text: &str) -> Result<f64, std::num::ParseFloatError> {
    match text {
        "+Inf" => Ok(f64::INFINITY),
        other => other.parse(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RENDERED: &str = r#"# TYPE hookinbox_ack_duration_seconds histogram
hookinbox_ack_duration_seconds_bucket{endpoint="a",outcome="accepted",le="0.001"} 50
hookinbox_ack_duration_seconds_bucket{endpoint="a",outcome="accepted",le="0.005"} 98
hookinbox_ack_duration_seconds_bucket{endpoint="a",outcome="accepted",le="0.01"} 99
hookinbox_ack_duration_seconds_bucket{endpoint="a",outcome="accepted",le="+Inf"} 99
hookinbox_ack_duration_seconds_bucket{endpoint="b",outcome="duplicate",le="0.001"} 0
hookinbox_ack_duration_seconds_bucket{endpoint="b",outcome="duplicate",le="0.005"} 0
hookinbox_ack_duration_seconds_bucket{endpoint="b",outcome="duplicate",le="0.01"} 0
hookinbox_ack_duration_seconds_bucket{endpoint="b",outcome="duplicate",le="+Inf"} 1
hookinbox_ack_duration_seconds_bucket{endpoint="b",outcome="rejected",le="0.001"} 0
hookinbox_ack_duration_seconds_bucket{endpoint="b",outcome="rejected",le="+Inf"} 500
hookinbox_ack_duration_seconds_sum{endpoint="a",outcome="accepted"} 0.2
"#;

    #[test]
    fn the_p99_of_committed_acks_is_the_bound_of_its_bucket() {
        // 100 committed acks (refusals are not counted): the 99th is in
        // the 10 ms bucket.
        assert_eq!(
            ack_p99(RENDERED),
            Some(AckP99 {
                upper_bound_seconds: Some(0.01),
                samples: 100
            })
        );
    }

    #[test]
    fn beyond_the_largest_bucket_there_is_no_bound_and_nothing_is_none() {
        let slow = "hookinbox_ack_duration_seconds_bucket{endpoint=\"a\",outcome=\"accepted\",le=\"10\"} 0\n\
                    hookinbox_ack_duration_seconds_bucket{endpoint=\"a\",outcome=\"accepted\",le=\"+Inf\"} 3\n";
        assert_eq!(
            ack_p99(slow),
            Some(AckP99 {
                upper_bound_seconds: None,
                samples: 3
            })
        );
        assert_eq!(ack_p99("# nothing yet\n"), None);
    }
}
