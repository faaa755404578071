//! Why a configuration cannot be used.

use std::path::PathBuf;

/// A configuration that cannot be used. Messages name the field
/// (`endpoint[2].target[0].timeout`) and never include a secret value.
///
/// Each message is complete on its own, cause included, and the variants
/// expose no `source()`: every printer (the CLI's `error: …` line, a log
/// line, `config check`) then shows the cause exactly once.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file could not be read: the configuration, or a file it names (a
    /// secret, a certificate).
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The text is not TOML, or not the shape of a configuration (an
    /// unknown field, a value of the wrong type).
    #[error("{}: {message}", path.display())]
    Parse {
        /// The configuration file.
        path: PathBuf,
        /// The line and the parser's reason (never the line's text).
        message: String,
    },
    /// A value the types accept but the rules do not.
    #[error("{field}: {message}")]
    Invalid {
        /// The field as the file spells it (`endpoint[2].target[0].timeout`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

impl ConfigError {
    /// A value of `field` the rules do not allow.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_error_states_its_cause_once() {
        let error = ConfigError::Read {
            path: PathBuf::from("nope.toml"),
            error: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        // As the binary prints it: the whole chain, joined by ": ".
        let printed = format!("{:#}", anyhow::Error::from(error));
        assert_eq!(printed, "cannot read nope.toml: entity not found");
    }
}
