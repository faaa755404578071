//! The writer thread: it owns the one write connection and applies every
//! operation waiting in its queue in one transaction (group commit). Each
//! caller is answered only after the COMMIT of its batch returned, so a 2xx
//! never precedes the fsync that makes the event survive a crash.
//!
//! Each operation runs in its own SAVEPOINT: one that fails is rolled back
//! alone and its caller gets the error, the others still commit. If the
//! COMMIT itself fails, every caller of the batch gets `Unavailable` (a
//! retryable 503): nothing half-written is ever acknowledged.
//!
//! Bodies go to the payload log (see `payload_log`): reserved while the ops
//! run, written and synced just before the COMMIT, so a committed row never
//! references bytes that are not durable. After a failed payload write the
//! log rests for a short, growing pause (`write_backoff`): ops with bodies
//! are answered `Unavailable` at once, without touching the disk, while
//! body-less ops (leases, settlements) still commit. The same happens while
//! the bodies would eat into the disk's last bytes, kept for SQLite
//! (`disk_reserve`).
//!
//! A caller may stop waiting (its commit deadline passed, its client went
//! away). An op whose caller is gone before its batch starts is skipped:
//! nobody would hear its answer, and after a stalled disk recovers the
//! writer then works only for callers still waiting. An op already in a
//! batch commits or not with it; its caller was answered 503 (outcome
//! unknown), and the provider's retry finds it as a duplicate or inserts it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::oneshot;

use super::disk_reserve::DiskReserve;
use super::payload_log::PayloadLog;
use super::stall_point::StallPoint;
use super::wal_restart::WalRestart;
use crate::StoreError;

/// One unit of work for the writer.
pub(crate) trait WriteOp: Send {
    /// Payload bytes this op writes, to bound a batch's size.
    fn weight(&self) -> usize;
    /// Runs inside the batch transaction (within its own savepoint); bodies
    /// it reserves in `payloads` are rolled back with the savepoint.
    fn apply(&mut self, conn: &Connection, payloads: &mut PayloadLog) -> Result<(), OpError>;
    /// Answers the caller once the batch's fate is known.
    fn finish(self: Box<Self>, outcome: Result<(), StoreError>);
    /// The caller stopped waiting for the answer: the op need not run.
    fn abandoned(&self) -> bool;
}

/// A write op built from a closure; its result is sent after the commit.
pub(crate) struct TxOp<T, F> {
    weight: usize,
    work: F,
    result: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> TxOp<T, F>
where
    T: Send + 'static,
    F: FnMut(&Connection, &mut PayloadLog) -> Result<T, OpError> + Send + 'static,
{
    /// The op, boxed for the writer's queue, and where its answer arrives.
    pub(crate) fn boxed(
        weight: usize,
        work: F,
    ) -> (Box<dyn WriteOp>, oneshot::Receiver<Result<T, StoreError>>) {
        let (reply, answer) = oneshot::channel();
        let op = TxOp {
            weight,
            work,
            result: None,
            reply,
        };
        (Box::new(op), answer)
    }
}

impl<T, F> WriteOp for TxOp<T, F>
where
    T: Send + 'static,
    F: FnMut(&Connection, &mut PayloadLog) -> Result<T, OpError> + Send + 'static,
{
    fn weight(&self) -> usize {
        self.weight
    }

    fn apply(&mut self, conn: &Connection, payloads: &mut PayloadLog) -> Result<(), OpError> {
        match (self.work)(conn, payloads) {
            Ok(value) => {
                self.result = Some(Ok(value));
                Ok(())
            }
            Err(error) => {
                self.result = Some(Err(StoreError::from(&error)));
                Err(error)
            }
        }
    }

    fn finish(self: Box<Self>, outcome: Result<(), StoreError>) {
        let answer = match (outcome, self.result) {
            (Err(commit_error), _) => Err(commit_error),
            (Ok(()), Some(result)) => result,
            (Ok(()), None) => Err(StoreError::unavailable("operation was not applied")),
        };
        // A caller that went away (client disconnected) is fine: what was
        // committed stays committed and a retry finds it.
        let _ = self.reply.send(answer);
    }

    fn abandoned(&self) -> bool {
        self.reply.is_closed()
    }
}

/// Why one op failed inside its savepoint.
#[derive(Debug)]
pub(crate) enum OpError {
    Sql(rusqlite::Error),
    Handler(crate::HandlerError),
    /// A stored record did not open or match its fingerprint.
    Corrupt(String),
    /// Anything else that makes the store unavailable (the text says what).
    Unavailable(String),
}

impl From<rusqlite::Error> for OpError {
    fn from(error: rusqlite::Error) -> Self {
        OpError::Sql(error)
    }
}

impl From<StoreError> for OpError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Corrupt(message) => OpError::Corrupt(message),
            other => OpError::Unavailable(other.to_string()),
        }
    }
}

impl From<&OpError> for StoreError {
    fn from(error: &OpError) -> Self {
        match error {
            OpError::Sql(error) => StoreError::unavailable(error.to_string()),
            OpError::Handler(error) => StoreError::Handler(error.to_string()),
            OpError::Corrupt(message) => StoreError::Corrupt(message.clone()),
            OpError::Unavailable(message) => StoreError::unavailable(message.clone()),
        }
    }
}

/// Limits on one group commit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchLimits {
    pub max_ops: usize,
    pub max_bytes: usize,
    /// Least time from one commit's start to the next one's: a batch that
    /// starts with a body and would start sooner waits for ops until then
    /// (see [`gather`]); other batches never wait.
    pub commit_interval: Duration,
}

/// Runs until every sender is dropped, then returns after the last batch.
/// `queued` counts the ops sent and not yet taken: the writer takes one
/// off for each op it receives.
pub(crate) fn run(
    mut conn: Connection,
    mut payloads: PayloadLog,
    queue: Receiver<Box<dyn WriteOp>>,
    limits: BatchLimits,
    queued: &AtomicUsize,
    mut reserve: DiskReserve,
    wal_restart: &WalRestart,
) {
    let mut last_start: Option<Instant> = None;
    while let Ok(first) = queue.recv() {
        let gather_until = gather_deadline(first.as_ref(), last_start, limits.commit_interval);
        let mut batch = gather(first, &queue, limits, gather_until);
        queued.fetch_sub(batch.len(), Ordering::Relaxed);
        skip_abandoned(&mut batch);
        if !payloads.accepts_bodies(Instant::now()) {
            batch = refuse_ops_with_bodies(batch, "payload log: resting after a failed write");
        } else if !room_for_bodies(&mut reserve, &mut payloads, body_bytes(&batch)) {
            batch = refuse_ops_with_bodies(batch, "disk nearly full: new bodies refused");
        }
        if batch.is_empty() {
            continue;
        }
        let started = Instant::now();
        last_start = Some(started);
        let committed = commit(&mut conn, &mut payloads, &mut batch);
        metrics::histogram!("hookinbox_commit_duration_seconds")
            .record(started.elapsed().as_secs_f64());
        metrics::histogram!("hookinbox_commit_batch_ops").record(batch.len() as f64);
        match committed {
            Ok(()) => {
                for op in batch {
                    op.finish(Ok(()));
                }
            }
            Err(error) => {
                tracing::error!(message = "Group commit failed; batch rolled back.", %error, ops = batch.len());
                for op in batch {
                    op.finish(Err(StoreError::unavailable(error.to_string())));
                }
            }
        }
        // Between batches, with every caller of this one answered: the
        // writer holds no lock, so the RESTART waits for nobody but
        // readers.
        wal_restart.run_if_asked(&conn);
    }
}

/// Until when the batch that starts with `first` waits for more ops: the
/// previous commit's start plus the interval. Only a batch that starts
/// with a body waits; leases and settlements are a worker's round trip,
/// which a wait would slow.
fn gather_deadline(
    first: &dyn WriteOp,
    last_start: Option<Instant>,
    commit_interval: Duration,
) -> Option<Instant> {
    last_start
        .filter(|_| first.weight() > 0 && !commit_interval.is_zero())
        .map(|start| start + commit_interval)
}

/// The batch that starts with `first`: every op already waiting, and, when
/// `first` carries a body and the previous commit started less than
/// `commit_interval` ago, those that arrive until `until`, within the
/// batch's limits.
///
/// Each commit costs two syncs (payload log and WAL), about 60-85 µs of
/// CPU each on a virtio disk (bench/RESULTS.md §14) whatever its size. At a
/// moderate rate the ops come one by one, so every event paid for its own
/// commit; waiting for the next ops groups them, and the syncs are paid
/// per batch. A caller waits at most the interval for it, and only while
/// commits come that close together: on a quiet server an op commits at
/// once, and under saturation commits take longer than the interval.
///
/// The writer sleeps until `until` and then takes what arrived, rather
/// than blocking on the queue: a receiver blocked on the queue is woken
/// by every op sent to it, a futex wake on the sending worker and a
/// context switch on this thread per event, only to wait again
/// (bench/RESULTS.md §20). A batch that fills up before `until` waits
/// for it all the same: the interval is the least time between two
/// commits' starts, as configured.
fn gather(
    first: Box<dyn WriteOp>,
    queue: &Receiver<Box<dyn WriteOp>>,
    limits: BatchLimits,
    until: Option<Instant>,
) -> Vec<Box<dyn WriteOp>> {
    let mut bytes = first.weight();
    let mut batch = vec![first];
    take_waiting(&mut batch, &mut bytes, queue, limits);
    let full = batch.len() >= limits.max_ops || bytes >= limits.max_bytes;
    if let Some(wait) = until.and_then(|until| until.checked_duration_since(Instant::now())) {
        if !full {
            std::thread::sleep(wait);
            take_waiting(&mut batch, &mut bytes, queue, limits);
        }
    }
    batch
}

/// Moves the ops waiting in `queue` into `batch`, within its limits.
fn take_waiting(
    batch: &mut Vec<Box<dyn WriteOp>>,
    bytes: &mut usize,
    queue: &Receiver<Box<dyn WriteOp>>,
    limits: BatchLimits,
) {
    while batch.len() < limits.max_ops && *bytes < limits.max_bytes {
        let Ok(next) = queue.try_recv() else {
            break;
        };
        *bytes += next.weight();
        batch.push(next);
    }
}

/// Drops the ops whose callers stopped waiting (see the module doc).
fn skip_abandoned(batch: &mut Vec<Box<dyn WriteOp>>) {
    let before = batch.len();
    batch.retain(|op| !op.abandoned());
    let skipped = before - batch.len();
    if skipped > 0 {
        metrics::counter!("hookinbox_commit_abandoned_ops_total").increment(skipped as u64);
    }
}

/// Whether the disk keeps its reserve with `bytes` more of bodies (a
/// batch without bodies always has room). When it would not, the writer
/// lets go of its segment: a purge never deletes the segment its own
/// process's writer appends to, and one another process deletes frees its
/// space only once nobody holds it open. The next batch with bodies
/// starts a new one.
fn room_for_bodies(reserve: &mut DiskReserve, payloads: &mut PayloadLog, bytes: u64) -> bool {
    if bytes == 0 || reserve.allows(bytes) {
        return true;
    }
    payloads.leave_segment();
    false
}

/// Payload bytes the ops of `batch` would write.
fn body_bytes(batch: &[Box<dyn WriteOp>]) -> u64 {
    batch.iter().map(|op| op.weight() as u64).sum()
}

/// The payload log is resting after a failed write, or the bodies would
/// eat into the disk's reserve (`why`): ops with bodies are answered now,
/// the others go on to commit.
fn refuse_ops_with_bodies(batch: Vec<Box<dyn WriteOp>>, why: &str) -> Vec<Box<dyn WriteOp>> {
    let (with_bodies, rest): (Vec<_>, Vec<_>) = batch.into_iter().partition(|op| op.weight() > 0);
    metrics::counter!("hookinbox_payload_log_refused_ops_total")
        .increment(with_bodies.len() as u64);
    for op in with_bodies {
        op.finish(Err(StoreError::unavailable(why)));
    }
    rest
}

/// Why a batch did not commit.
#[derive(Debug, thiserror::Error)]
enum CommitError {
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
    #[error("payload log: {0}")]
    PayloadLog(#[from] std::io::Error),
}

fn commit(
    conn: &mut Connection,
    payloads: &mut PayloadLog,
    batch: &mut [Box<dyn WriteOp>],
) -> Result<(), CommitError> {
    payloads.prepare_batch(batch.iter().any(|op| op.weight() > 0), Instant::now())?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for op in batch.iter_mut() {
        // A savepoint per op, with cached statements (rusqlite's
        // `savepoint()` parses its SQL on every call).
        tx.prepare_cached("SAVEPOINT op")?.execute([])?;
        let mark = payloads.mark();
        if op.apply(&tx, payloads).is_err() {
            // The op keeps its error; its writes and its bodies are undone.
            tx.prepare_cached("ROLLBACK TO op")?.execute([])?;
            payloads.rollback_to(mark);
        }
        tx.prepare_cached("RELEASE op")?.execute([])?;
    }
    // Bodies first: if they cannot be made durable the transaction is
    // dropped (rolled back) and every caller gets 503.
    payloads.flush(Instant::now())?;
    StallPoint::Commit.wait_while_armed();
    Ok(tx.commit()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(weight: usize) -> (Box<dyn WriteOp>, oneshot::Receiver<Result<(), StoreError>>) {
        TxOp::boxed(weight, |_: &Connection, _: &mut PayloadLog| Ok(()))
    }

    fn limits(max_ops: usize) -> BatchLimits {
        BatchLimits {
            max_ops,
            max_bytes: usize::MAX,
            commit_interval: Duration::from_millis(2),
        }
    }

    #[test]
    fn a_batch_waits_for_ops_sent_within_the_interval() {
        let (queue, ops) = std::sync::mpsc::sync_channel(8);
        let (first, _first_answer) = op(10);
        let (second, _second_answer) = op(10);
        // The deadline is far off for the sender, which sends once the
        // writer is asleep: only a batch that waits can take its op.
        let until = Instant::now() + Duration::from_secs(1);
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            queue.send(second).unwrap();
            queue
        });
        let batch = gather(first, &ops, limits(8), Some(until));
        assert!(Instant::now() >= until, "the batch waited for its deadline");
        assert_eq!(batch.len(), 2, "the op sent after the first joined it");
        drop(sender.join().unwrap());
    }

    #[test]
    fn a_full_batch_does_not_wait_and_leaves_the_rest_queued() {
        let (queue, ops) = std::sync::mpsc::sync_channel(8);
        let (first, _a) = op(10);
        let (second, _b) = op(10);
        let (third, _c) = op(10);
        queue.send(second).unwrap();
        queue.send(third).unwrap();
        let until = Instant::now() + Duration::from_secs(60);
        let batch = gather(first, &ops, limits(2), Some(until));
        assert_eq!(batch.len(), 2, "the batch stopped at its limit");
        assert!(Instant::now() < until, "a full batch commits at once");
        assert!(
            ops.try_recv().is_ok(),
            "the third op waits for the next batch"
        );
    }

    #[test]
    fn without_a_deadline_a_batch_takes_only_what_waits() {
        let (queue, ops) = std::sync::mpsc::sync_channel(8);
        let (first, _a) = op(10);
        let (waiting, _b) = op(10);
        queue.send(waiting).unwrap();
        let batch = gather(first, &ops, limits(8), None);
        assert_eq!(batch.len(), 2);
        assert!(ops.try_recv().is_err(), "nothing else was waited for");
    }

    #[test]
    fn only_a_batch_with_a_body_waits_and_only_after_a_commit() {
        let started = Instant::now();
        let interval = Duration::from_millis(2);
        let (with_body, _a) = op(10);
        let (lease, _b) = op(0);
        assert_eq!(
            gather_deadline(with_body.as_ref(), Some(started), interval),
            Some(started + interval)
        );
        assert_eq!(
            gather_deadline(lease.as_ref(), Some(started), interval),
            None
        );
        assert_eq!(gather_deadline(with_body.as_ref(), None, interval), None);
        assert_eq!(
            gather_deadline(with_body.as_ref(), Some(started), Duration::ZERO),
            None
        );
    }

    #[test]
    fn ops_whose_callers_stopped_waiting_are_skipped() {
        let (waited_for, mut answer) = op(10);
        let (given_up, gone) = op(10);
        drop(gone);
        let mut batch = vec![given_up, waited_for];
        skip_abandoned(&mut batch);
        assert_eq!(batch.len(), 1);
        batch.remove(0).finish(Ok(()));
        assert!(
            answer.try_recv().is_ok(),
            "the op still waited for is the one kept"
        );
    }

    #[test]
    fn under_the_reserve_bodies_are_refused_and_the_segment_is_let_go_of() {
        let root = tempfile::tempdir().unwrap();
        let (log_dir, mut payloads) = super::super::payload_log::open_for_tests(root.path());
        payloads.prepare_batch(true, Instant::now()).unwrap();
        payloads.reserve(&bytes::Bytes::from_static(b"kept"));
        payloads.flush(Instant::now()).unwrap();
        let mut full = DiskReserve::new(&log_dir, u64::MAX);
        assert!(room_for_bodies(&mut full, &mut payloads, 0), "no bodies");
        assert!(payloads.open_segment().is_some());
        assert!(!room_for_bodies(&mut full, &mut payloads, 1));
        assert!(
            payloads.open_segment().is_none(),
            "the segment is closed, so a purge here may delete it"
        );
        let mut roomy = DiskReserve::new(&log_dir, 0);
        assert!(room_for_bodies(&mut roomy, &mut payloads, 1));
    }

    #[test]
    fn while_the_payload_log_rests_only_ops_with_bodies_are_refused() {
        let (with_body, mut refused) = op(10);
        let (without_body, mut waiting) = op(0);
        let rest = refuse_ops_with_bodies(vec![with_body, without_body], "resting");
        assert!(matches!(
            refused.try_recv(),
            Ok(Err(StoreError::Unavailable(_)))
        ));
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].weight(), 0);
        assert!(
            waiting.try_recv().is_err(),
            "the body-less op is still to be committed"
        );
    }
}
