//! One script loaded into a QuickJS runtime of its own, with a memory
//! limit and a time limit per call. A sandbox lives on one thread (QuickJS
//! runtimes are not shared between threads here); `pool` keeps one per
//! script per thread.
//!
//! No I/O: the context has JavaScript's built-in objects only (QuickJS's
//! `std` and `os` modules are not part of `rquickjs`, and no module loader
//! is installed, so `import` finds nothing). Deterministic: `Date.now()`
//! and `new Date()` are the event's received time, and `Math.random()` is
//! a generator seeded with it, so every attempt and replay of one event
//! computes the same request.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rquickjs::context::EvalOptions;
use rquickjs::{Context, Ctx, Function, Runtime, Value};

use super::error::TransformError;
use super::webhook::{TransformOutcome, WebhookInput};

/// What one call may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Memory of the script's runtime: its code, its globals and one call.
    pub memory_bytes: usize,
    /// Time one call (or the script's top-level code) may run.
    pub time: Duration,
}

impl Limits {
    /// 64 MiB and 1 s: a webhook transform renames and reshapes; it does
    /// not compute.
    pub const DEFAULT: Limits = Limits {
        memory_bytes: 64 * 1024 * 1024,
        time: Duration::from_secs(1),
    };
}

/// Installed before the script: the fixed clock and the seeded
/// `Math.random`, set per call through `__hookinbox_set_clock`.
const PRELUDE: &str = r#"
(() => {
  const RealDate = Date;
  let now = 0;
  let seed = 1;
  function FixedDate(...args) {
    if (!new.target) return new RealDate(now).toString();
    return args.length === 0 ? new RealDate(now) : new RealDate(...args);
  }
  FixedDate.prototype = RealDate.prototype;
  FixedDate.now = () => now;
  FixedDate.parse = RealDate.parse;
  FixedDate.UTC = RealDate.UTC;
  Object.defineProperty(RealDate.prototype, "constructor", { value: FixedDate });
  Math.random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  Object.defineProperty(globalThis, "__hookinbox_set_clock", {
    value: (t) => { now = t; seed = (t % 2147483647) + 1; },
    writable: false, enumerable: false, configurable: false,
  });
  globalThis.Date = FixedDate;
})();
"#;

/// JavaScript's own error types: the only names an error text repeats (a
/// script could give an error any name, payload text included).
const ERROR_NAMES: &[&str] = &[
    "Error",
    "TypeError",
    "RangeError",
    "ReferenceError",
    "SyntaxError",
    "EvalError",
    "URIError",
    "InternalError",
    "AggregateError",
];

/// A compiled script, ready to be called.
pub struct Sandbox {
    // Dropped before the runtime it belongs to.
    context: Context,
    runtime: Runtime,
    file_name: String,
    limits: Limits,
    clock: Arc<CallClock>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("file_name", &self.file_name)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// The deadline the interrupt handler checks, and whether it fired.
struct CallClock {
    started: Instant,
    /// Nanoseconds after `started`, plus one; 0 when no call runs. Whole
    /// milliseconds would let a call stop up to 1 ms before its limit.
    deadline: AtomicU64,
    fired: AtomicBool,
}

/// A duration in nanoseconds (u64 holds 584 years).
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

impl CallClock {
    fn arm(&self, limit: Duration) {
        self.fired.store(false, Ordering::Relaxed);
        let deadline = self.started.elapsed() + limit;
        self.deadline.store(nanos(deadline) + 1, Ordering::Relaxed);
    }

    fn disarm(&self) -> bool {
        self.deadline.store(0, Ordering::Relaxed);
        self.fired.load(Ordering::Relaxed)
    }

    fn interrupt(&self) -> bool {
        let deadline = self.deadline.load(Ordering::Relaxed);
        if deadline != 0 && nanos(self.started.elapsed()) + 1 >= deadline {
            self.fired.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }
}

impl Sandbox {
    /// Loads `source` (named `file_name` in stack traces) into a new
    /// runtime and runs its top-level code, within `limits`. Fails when it
    /// does not parse, its top-level code throws or it defines no
    /// `handler` function.
    pub fn compile(
        source: &str,
        file_name: &str,
        limits: Limits,
    ) -> Result<Sandbox, TransformError> {
        let runtime = Runtime::new().map_err(|e| TransformError::Engine(e.to_string()))?;
        runtime.set_memory_limit(limits.memory_bytes);
        runtime.set_max_stack_size(512 * 1024);
        let clock = Arc::new(CallClock {
            started: Instant::now(),
            deadline: AtomicU64::new(0),
            fired: AtomicBool::new(false),
        });
        let interrupt = Arc::clone(&clock);
        runtime.set_interrupt_handler(Some(Box::new(move || interrupt.interrupt())));
        let context = Context::full(&runtime).map_err(|e| TransformError::Engine(e.to_string()))?;
        let sandbox = Sandbox {
            context,
            runtime,
            file_name: file_name.to_owned(),
            limits,
            clock,
        };
        sandbox.load(source)?;
        Ok(sandbox)
    }

    fn load(&self, source: &str) -> Result<(), TransformError> {
        self.clock.arm(self.limits.time);
        let loaded = self.context.with(|ctx| {
            let mut prelude = EvalOptions::default();
            prelude.strict = false;
            ctx.eval_with_options::<(), _>(PRELUDE, prelude)
                .map_err(|e| TransformError::Engine(e.to_string()))?;
            let mut options = EvalOptions::default();
            options.strict = false;
            options.filename = Some(self.file_name.clone());
            match ctx.eval_with_options::<(), _>(source, options) {
                Ok(()) => {}
                Err(rquickjs::Error::Exception) => {
                    let exception = ctx.catch();
                    return Err(match self.exception(&exception) {
                        TransformError::Thrown {
                            name,
                            line,
                            message,
                        } if name == "SyntaxError" => TransformError::Compile(format!(
                            "SyntaxError: {message}{}",
                            line.map(|l| format!(" at line {l}")).unwrap_or_default()
                        )),
                        TransformError::Thrown { name, line, .. } => {
                            TransformError::Compile(format!(
                                "its top-level code threw {name}{}",
                                line.map(|l| format!(" at line {l}")).unwrap_or_default()
                            ))
                        }
                        other => other,
                    });
                }
                Err(error) => return Err(TransformError::Engine(error.to_string())),
            }
            match ctx.globals().get::<_, Value>("handler") {
                Ok(handler) if handler.is_function() => Ok(()),
                _ => Err(TransformError::NoHandler),
            }
        });
        self.finish(loaded)
    }

    /// Calls `handler` with `input`; the answer, or why there is none.
    pub fn run(&self, input: &WebhookInput) -> Result<TransformOutcome, TransformError> {
        let input_json = input.to_json();
        self.clock.arm(self.limits.time);
        let result = self.context.with(|ctx| {
            let called = call(&ctx, &input_json, input.received_at_ms);
            match called {
                Ok(result) => Ok(result),
                Err(rquickjs::Error::Exception) => Err(self.exception(&ctx.catch())),
                Err(rquickjs::Error::Allocation) => Err(self.memory_limit()),
                Err(rquickjs::Error::FromJs { .. }) => Err(TransformError::NoHandler),
                Err(error) => Err(TransformError::Engine(error.to_string())),
            }
        });
        let result = self.finish(result)?;
        TransformOutcome::from_result(result.as_deref(), input)
    }

    /// Disarms the clock; an interrupted call is a time-limit failure
    /// whatever exception QuickJS made of it.
    fn finish<T>(&self, result: Result<T, TransformError>) -> Result<T, TransformError> {
        let fired = self.clock.disarm();
        match result {
            Err(_) if fired => Err(TransformError::TimeLimit {
                limit_ms: self.limits.time.as_millis() as u64,
            }),
            other => other,
        }
    }

    fn memory_limit(&self) -> TransformError {
        TransformError::MemoryLimit {
            limit_mib: self.limits.memory_bytes / (1024 * 1024),
        }
    }

    /// Whether the runtime is worth keeping after a failure: a call
    /// stopped by a limit may have left it full or half-way through.
    pub fn is_reusable_after(error: &TransformError) -> bool {
        !matches!(
            error,
            TransformError::TimeLimit { .. }
                | TransformError::MemoryLimit { .. }
                | TransformError::Engine(_)
        )
    }

    /// What a thrown value says, reduced to its error type and the line of
    /// this script it was thrown at.
    fn exception(&self, exception: &Value<'_>) -> TransformError {
        let Some(object) = exception.as_object() else {
            if exception.is_null() || exception.is_undefined() {
                // QuickJS throws null when even the out-of-memory error
                // cannot be allocated.
                return self.memory_limit();
            }
            return TransformError::Thrown {
                name: "a value".into(),
                line: None,
                message: String::new(),
            };
        };
        let text = |name: &str| object.get::<_, Option<String>>(name).ok().flatten();
        let name = text("name").unwrap_or_default();
        let message = text("message").unwrap_or_default();
        if name == "InternalError" && message == "out of memory" {
            return self.memory_limit();
        }
        if name == "RangeError" && message.contains("stack overflow") {
            return TransformError::MemoryLimit {
                limit_mib: self.limits.memory_bytes / (1024 * 1024),
            };
        }
        let line = text("stack").and_then(|stack| line_in(&stack, &self.file_name));
        let name = if ERROR_NAMES.contains(&name.as_str()) {
            name
        } else {
            "an exception".to_owned()
        };
        TransformError::Thrown {
            name,
            line,
            message,
        }
    }

    /// Memory the runtime holds now, in bytes (for tests and logs).
    pub fn memory_used(&self) -> i64 {
        self.runtime.memory_usage().memory_used_size
    }
}

/// Sets the clock, parses the input and calls `handler`; the answer as
/// `JSON.stringify` writes it (`None` for `undefined`).
fn call(ctx: &Ctx<'_>, input_json: &str, received_at_ms: i64) -> rquickjs::Result<Option<String>> {
    let set_clock: Function = ctx.globals().get("__hookinbox_set_clock")?;
    set_clock.call::<_, ()>((received_at_ms as f64,))?;
    let handler: Function = ctx.globals().get("handler")?;
    let webhook = ctx.json_parse(input_json)?;
    let answer: Value = handler.call((webhook,))?;
    ctx.json_stringify(answer)?
        .map(|text| text.to_string())
        .transpose()
}

/// The first line number of `file_name` in a QuickJS stack trace
/// (`    at handler (transform.js:3:9)`).
fn line_in(stack: &str, file_name: &str) -> Option<u32> {
    let marker = format!("{file_name}:");
    let at = stack.find(&marker)? + marker.len();
    let digits: String = stack[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
#[path = "sandbox_tests.rs"]
mod tests;
