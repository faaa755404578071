//! The threads transforms run on. A call may run up to its time limit;
//! on the async executor that would stall every other delivery of the
//! process, so calls go to a few threads of their own, each keeping one
//! compiled sandbox per script (QuickJS runtimes stay on the thread that
//! made them).

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use tokio::sync::oneshot;

use super::error::TransformError;
use super::sandbox::Sandbox;
use super::script::TransformScript;
use super::webhook::{TransformOutcome, WebhookInput};

struct Job {
    script: Arc<TransformScript>,
    input: WebhookInput,
    reply: oneshot::Sender<Result<TransformOutcome, TransformError>>,
}

/// A fixed set of transform threads, fed from one queue.
pub struct TransformPool {
    jobs: Mutex<mpsc::Sender<Job>>,
}

impl TransformPool {
    /// The process's pool: started at the first transform, with as many
    /// threads as cores (at least 2, at most 8), so one script looping
    /// until its limit never holds every thread.
    pub fn shared() -> &'static TransformPool {
        static POOL: OnceLock<TransformPool> = OnceLock::new();
        POOL.get_or_init(|| {
            let threads = std::thread::available_parallelism()
                .map(usize::from)
                .unwrap_or(2)
                .clamp(2, 8);
            TransformPool::start(threads)
        })
    }

    fn start(threads: usize) -> TransformPool {
        let (sender, receiver) = mpsc::channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        for index in 0..threads {
            let receiver = Arc::clone(&receiver);
            let spawned = std::thread::Builder::new()
                .name(format!("hookinbox-transform-{index}"))
                .stack_size(4 * 1024 * 1024)
                .spawn(move || serve(&receiver));
            if let Err(error) = spawned {
                tracing::error!(message = "Could not start a transform thread.", %error);
            }
        }
        TransformPool {
            jobs: Mutex::new(sender),
        }
    }

    /// Runs `script`'s handler on `input` on a transform thread.
    pub async fn run(
        &self,
        script: Arc<TransformScript>,
        input: WebhookInput,
    ) -> Result<TransformOutcome, TransformError> {
        let (reply, answer) = oneshot::channel();
        let sent = match self.jobs.lock() {
            Ok(jobs) => jobs.send(Job {
                script,
                input,
                reply,
            }),
            Err(_) => return Err(TransformError::Unavailable),
        };
        if sent.is_err() {
            return Err(TransformError::Unavailable);
        }
        answer.await.unwrap_or(Err(TransformError::Unavailable))
    }
}

/// A compiled sandbox of one script's text, on this thread.
struct Compiled {
    script: Weak<TransformScript>,
    generation: u64,
    sandbox: Sandbox,
}

/// One transform thread: takes jobs until the pool is dropped.
fn serve(jobs: &Mutex<mpsc::Receiver<Job>>) {
    let mut compiled: HashMap<usize, Compiled> = HashMap::new();
    loop {
        let job = match jobs.lock() {
            Ok(receiver) => receiver.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        // Sandboxes of scripts no target holds any more (a reload of the
        // configuration) are dropped.
        compiled.retain(|_, entry| entry.script.strong_count() > 0);
        let answer = run_job(&mut compiled, &job.script, &job.input);
        let _ = job.reply.send(answer);
    }
}

fn run_job(
    compiled: &mut HashMap<usize, Compiled>,
    script: &Arc<TransformScript>,
    input: &WebhookInput,
) -> Result<TransformOutcome, TransformError> {
    let key = Arc::as_ptr(script) as usize;
    let text = script.text();
    let current = compiled
        .get(&key)
        .is_some_and(|entry| entry.generation == text.generation);
    if !current {
        compiled.remove(&key);
        let sandbox = script.sandbox(&text)?;
        compiled.insert(
            key,
            Compiled {
                script: Arc::downgrade(script),
                generation: text.generation,
                sandbox,
            },
        );
    }
    let entry = compiled.get(&key).ok_or(TransformError::Unavailable)?;
    let answer = entry.sandbox.run(input);
    if let Err(error) = &answer {
        if !Sandbox::is_reusable_after(error) {
            compiled.remove(&key);
        }
    }
    answer
}
