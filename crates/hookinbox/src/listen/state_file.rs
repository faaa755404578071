//! Where `listen` resumes: the cursor of the last event the local app
//! acknowledged, in a small JSON file written atomically (a temporary file,
//! fsync, rename, fsync of the folder), so a crash, `kill -9` or a power
//! cut leaves the old cursor or the new one, never a torn file.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::ListenError;

/// What the file holds: the cursor, and what it is a cursor of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListenState {
    pub admin: String,
    pub endpoint: String,
    pub cursor: String,
}

/// The default file: `$XDG_STATE_HOME/hookinbox/listen-<endpoint>.json`,
/// else under `$HOME/.local/state`.
pub fn default_path(endpoint: &str) -> Result<PathBuf, ListenError> {
    let base = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .map(|home| PathBuf::from(home).join(".local").join("state"))
            .ok_or(ListenError::NoStateDirectory)?,
    };
    let name: String = endpoint
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(base.join("hookinbox").join(format!("listen-{name}.json")))
}

/// The file of one stream.
pub struct StateFile {
    path: PathBuf,
    admin: String,
    endpoint: String,
}

impl StateFile {
    pub fn new(path: PathBuf, admin: &str, endpoint: &str) -> StateFile {
        StateFile {
            path,
            admin: admin.to_owned(),
            endpoint: endpoint.to_owned(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved cursor; `None` when there is no file yet. A file of
    /// another admin listener or endpoint is refused, not overwritten.
    pub fn load(&self) -> Result<Option<String>, ListenError> {
        let text = match fs::read(&self.path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(self.io(source)),
        };
        let state: ListenState =
            serde_json::from_slice(&text).map_err(|error| ListenError::StateFormat {
                path: self.path.clone(),
                detail: error.to_string(),
            })?;
        if state.admin != self.admin || state.endpoint != self.endpoint {
            return Err(ListenError::StateMismatch {
                path: self.path.clone(),
                admin: state.admin,
                endpoint: state.endpoint,
            });
        }
        Ok(Some(state.cursor))
    }

    /// Replaces the saved cursor, durably, before returning.
    pub fn save(&self, cursor: &str) -> Result<(), ListenError> {
        let state = ListenState {
            admin: self.admin.clone(),
            endpoint: self.endpoint.clone(),
            cursor: cursor.to_owned(),
        };
        let mut text = serde_json::to_vec(&state).map_err(|error| ListenError::StateFormat {
            path: self.path.clone(),
            detail: error.to_string(),
        })?;
        text.push(b'\n');
        let folder = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        create_private_dir(folder).map_err(|source| self.io(source))?;
        let temporary = self.path.with_extension("json.tmp");
        let written = (|| {
            let mut file = private_file(&temporary)?;
            file.write_all(&text)?;
            file.sync_all()?;
            fs::rename(&temporary, &self.path)?;
            File::open(folder)?.sync_all()
        })();
        written.map_err(|source| self.io(source))
    }

    fn io(&self, source: std::io::Error) -> ListenError {
        ListenError::State {
            path: self.path.clone(),
            source,
        }
    }
}

fn create_private_dir(folder: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(folder)
}

fn private_file(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_cursor_loads_back_and_replaces_the_one_before() {
        let dir = tempfile::tempdir().unwrap();
        let file = StateFile::new(dir.path().join("a/b/s.json"), "http://x:1", "stripe");
        assert_eq!(file.load().unwrap(), None);
        file.save("1.a").unwrap();
        file.save("2.b").unwrap();
        assert_eq!(file.load().unwrap().as_deref(), Some("2.b"));
        assert!(!dir.path().join("a/b/s.json.tmp").exists());
    }

    #[test]
    fn a_file_of_another_endpoint_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        StateFile::new(path.clone(), "http://x:1", "stripe")
            .save("1.a")
            .unwrap();
        let error = StateFile::new(path, "http://x:1", "github")
            .load()
            .unwrap_err();
        assert!(
            matches!(error, ListenError::StateMismatch { .. }),
            "{error}"
        );
    }
}
