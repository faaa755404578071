//! One request's life, shared by both modes: build the body, send, record.

use std::time::Instant;

use crate::event_body::EventBodies;
use crate::recorder::Recorder;
use crate::sender::Sender;

pub struct Load {
    pub sender: Sender,
    pub bodies: EventBodies,
    pub recorder: Recorder,
}

impl Load {
    /// Sends request `seq`. Latency runs from `intended` when given (open loop:
    /// the scheduled send time, so a late generator or a queue in front of the
    /// server shows up as latency) and from the actual start otherwise
    /// (closed loop). Only `measured` requests are recorded; warmup ones are
    /// only counted, so every 2xx of the run can be checked against the database.
    pub async fn one(&self, seq: u64, intended: Option<Instant>, measured: bool) {
        let started = Instant::now();
        let body = self.bodies.body(seq);
        let origin = intended.unwrap_or(started);
        if measured {
            let lag = intended.map(|due| started.saturating_duration_since(due));
            self.recorder.sent(started, lag, body.len());
        }
        let outcome = self.sender.send(&self.bodies.event_id(seq), body).await;
        if measured {
            let done = Instant::now();
            self.recorder
                .finished(outcome, done.saturating_duration_since(origin), done);
        } else {
            self.recorder.warmup_finished(outcome);
        }
    }
}
