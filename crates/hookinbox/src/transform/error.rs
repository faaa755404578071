//! Why a transform did not give a request to send.

/// A transform that failed. Displayed, it names the kind of failure and
/// at most a line of the script: it becomes the delivery's `last_error`,
/// which never holds payload text. [`TransformError::detail`] adds the
/// exception's own message, for `hookinbox transform test` only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransformError {
    /// The script file could not be read (at start-up or on SIGHUP).
    #[error("cannot read the script: {0}")]
    Read(String),
    /// The script does not parse, or its top-level code threw. The
    /// message is the engine's about the script's own text.
    #[error("the script does not load: {0}")]
    Compile(String),
    /// The script defines no global function `handler`.
    #[error("the script defines no function `handler(webhook)`")]
    NoHandler,
    /// `handler` threw: `name` is one of JavaScript's error types (or
    /// "a value" for anything else thrown); `message` is kept out of
    /// `Display`, since a script may put payload text in it.
    #[error("the handler threw {name}{}", line_suffix(*line))]
    Thrown {
        name: String,
        line: Option<u32>,
        message: String,
    },
    /// The call ran past its time limit and was interrupted.
    #[error("the handler ran past its time limit of {limit_ms} ms")]
    TimeLimit { limit_ms: u64 },
    /// The call needed more memory than its limit.
    #[error("the handler went over its memory limit of {limit_mib} MiB")]
    MemoryLimit { limit_mib: usize },
    /// The handler's answer is not a request hookinbox can send.
    #[error("the handler's result {0}")]
    BadResult(&'static str),
    /// QuickJS failed in a way that is not the script's exception.
    #[error("the JavaScript engine failed: {0}")]
    Engine(String),
    /// The transform threads have stopped (the process is shutting down).
    #[error("the transform threads have stopped")]
    Unavailable,
}

impl TransformError {
    /// `Display`, plus the thrown exception's message when there is one:
    /// for an operator running `hookinbox transform test` on their own
    /// event, never for a stored error.
    pub fn detail(&self) -> String {
        match self {
            TransformError::Thrown { message, .. } if !message.is_empty() => {
                format!("{self}: {message}")
            }
            _ => self.to_string(),
        }
    }
}

fn line_suffix(line: Option<u32>) -> String {
    line.map(|line| format!(" at line {line}"))
        .unwrap_or_default()
}
