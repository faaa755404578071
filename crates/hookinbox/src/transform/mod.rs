//! A target's `transform`: a JavaScript file whose `handler(webhook)`
//! reshapes each delivery before it is sent (docs/delivery.md,
//! "Transformations"; docs/architecture.md §5). The shape is Svix's:
//! `{ method, url, payload, headers }` in, the same (or `cancel: true`)
//! out, so a Svix or Hookdeck-style script pastes with little change.
//!
//! Why it is shaped this way:
//! - QuickJS (`rquickjs`, built from source) rather than V8: a small
//!   interpreter with a memory limit and an interrupt hook, and without its
//!   `std`/`os` modules there is no I/O to take away.
//! - The script runs on a few threads of its own (`pool`), never on the
//!   async executor: a script that loops until its time limit holds one of
//!   those threads, not the workers of other targets.
//! - It runs at delivery time on the stored body, with the event's received
//!   time as its clock, so every attempt and every replay of one event
//!   computes the same request.
//! - Errors name the kind of failure and a line of the script, never a
//!   value the script saw: they end up in `last_error`, which must hold no
//!   payload.

mod error;
mod pool;
mod sandbox;
mod script;
mod webhook;

pub use pool::TransformPool;
pub use sandbox::Limits;
pub use script::TransformScript;
pub use webhook::{TransformOutcome, WebhookInput};
