//! A target's transform file: read and checked at start-up, re-read on
//! SIGHUP. The text in use is swapped whole; each transform thread
//! compiles a text once, the first time it runs it, and again only after
//! a reload changed it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::error::TransformError;
use super::sandbox::{Limits, Sandbox};
use crate::reload::Reloadable;

/// Each loaded text's identity, unique in the process: a thread's
/// compiled sandbox is for one generation.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

/// One version of the script's text.
#[derive(Debug)]
pub struct ScriptText {
    pub generation: u64,
    pub text: String,
}

/// A transform file and the text of it in use.
#[derive(Debug)]
pub struct TransformScript {
    path: PathBuf,
    /// The target it belongs to (`endpoint/target`), for the log.
    owner: String,
    /// The name stack traces give the script: its file name.
    file_name: String,
    limits: Limits,
    current: RwLock<Arc<ScriptText>>,
}

impl TransformScript {
    /// Reads `path` and compiles it once (on this thread) to check it.
    pub fn load(
        path: &Path,
        owner: &str,
        limits: Limits,
    ) -> Result<TransformScript, TransformError> {
        let file_name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| "transform.js".to_owned());
        let text = read_checked(path, &file_name, limits)?;
        Ok(TransformScript {
            path: path.to_owned(),
            owner: owner.to_owned(),
            file_name,
            limits,
            current: RwLock::new(Arc::new(text)),
        })
    }

    /// The text in use.
    pub fn text(&self) -> Arc<ScriptText> {
        match self.current.read() {
            Ok(current) => Arc::clone(&current),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Compiles the text in use into a sandbox of this thread.
    pub fn sandbox(&self, text: &ScriptText) -> Result<Sandbox, TransformError> {
        Sandbox::compile(&text.text, &self.file_name, self.limits)
    }

    /// Re-reads the file; a text that does not load keeps the one in use.
    pub fn reread(&self) -> Result<(), TransformError> {
        let text = read_checked(&self.path, &self.file_name, self.limits)?;
        match self.current.write() {
            Ok(mut current) => *current = Arc::new(text),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(text),
        }
        Ok(())
    }
}

impl Reloadable for TransformScript {
    fn reload(&self) {
        match self.reread() {
            Ok(()) => tracing::info!(
                message = "Reloaded a transform.",
                target = %self.owner,
                path = %self.path.display()
            ),
            Err(error) => tracing::warn!(
                message = "A transform did not reload; the one in use stays.",
                target = %self.owner,
                path = %self.path.display(),
                %error
            ),
        }
    }
}

fn read_checked(
    path: &Path,
    file_name: &str,
    limits: Limits,
) -> Result<ScriptText, TransformError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| TransformError::Read(e.kind().to_string()))?;
    Sandbox::compile(&text, file_name, limits)?;
    Ok(ScriptText {
        generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
        text,
    })
}
