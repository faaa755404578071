//! One distinct event body per request: `{"id":"bench-<run>-<n>","type":"bench","pad":"…"}`.
//!
//! The padding comes from one pre-generated buffer of JSON-safe characters, so
//! building a body at send time is a single copy of at most 1 MiB and no
//! random number generation; the id makes every body unique, which is what the
//! server's dedup key sees.

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::body_sizes::BodySizes;
use crate::cli::MAX_BODY_BYTES;

const PAD_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

pub struct EventBodies {
    run_id: String,
    sizes: BodySizes,
    pad: Vec<u8>,
}

impl EventBodies {
    pub fn new(run_id: String, sizes: BodySizes, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
        let pad = (0..MAX_BODY_BYTES)
            .map(|_| PAD_ALPHABET[rng.random_range(0..PAD_ALPHABET.len())])
            .collect();
        Self { run_id, sizes, pad }
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The event id of request `seq`, as its body carries it.
    pub fn event_id(&self, seq: u64) -> String {
        format!("bench-{}-{}", self.run_id, seq)
    }

    /// The body of request `seq`: exactly the table's size for `seq`, unless the
    /// envelope alone is longer (only with very long run ids and tiny sizes).
    pub fn body(&self, seq: u64) -> Bytes {
        let size = self.sizes.size(seq);
        let head = format!(r#"{{"id":"{}","type":"bench","pad":""#, self.event_id(seq));
        const TAIL: &[u8] = b"\"}";
        let pad_len = size
            .saturating_sub(head.len() + TAIL.len())
            .min(self.pad.len());
        // A seq-dependent offset so consecutive bodies do not share their padding.
        let offset = (seq as usize).wrapping_mul(4099) % (self.pad.len() - pad_len + 1);
        let mut body = Vec::with_capacity(head.len() + pad_len + TAIL.len());
        body.extend_from_slice(head.as_bytes());
        body.extend_from_slice(&self.pad[offset..offset + pad_len]);
        body.extend_from_slice(TAIL);
        Bytes::from(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body_sizes::SizeSpec;

    fn bodies() -> EventBodies {
        let spec = SizeSpec {
            mean: 10_240,
            sigma: 1.0,
            large_share: 0.002,
            large_size: 1_000_000,
        };
        EventBodies::new("r1".into(), BodySizes::draw(spec, 1).unwrap(), 1)
    }

    #[test]
    fn bodies_are_json_with_unique_ids_and_the_drawn_size() {
        let bodies = bodies();
        for seq in [0_u64, 1, 2, 65_535, 65_536, 1_000_000] {
            let body = bodies.body(seq);
            assert_eq!(body.len(), bodies.sizes.size(seq));
            let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(value["id"], format!("bench-r1-{seq}"));
            assert_eq!(value["type"], "bench");
        }
    }

    #[test]
    fn large_bodies_fit_the_limit() {
        let bodies = bodies();
        let seq = (0..65_536)
            .find(|&s| bodies.sizes.size(s) == 1_000_000)
            .unwrap();
        let body = bodies.body(seq);
        assert_eq!(body.len(), 1_000_000);
        assert!(serde_json::from_slice::<serde_json::Value>(&body).is_ok());
    }
}
