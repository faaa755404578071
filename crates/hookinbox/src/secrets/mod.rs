//! The secrets the service holds, and what it does with them
//! (docs/architecture.md §6): the keys that encrypt stored bodies, each
//! endpoint's signing secrets and basic-auth credential, and the rules,
//! reloads and counts around them. One concept per file:
//!
//! - [`encryption`]: the `[[encryption.key]]` ring read into the store's
//!   keys; [`key_file`]: the development key file made on first start.
//! - [`secret_rules`]: what an endpoint secret must be beyond readable
//!   (length, file mode); [`basic_auth`]: an endpoint's own credential.
//! - [`learned`]: the secrets providers handed over in handshakes (Asana,
//!   Notion), versions of an endpoint's key ring read from the store.
//! - [`key_reload`]: swapping every endpoint's key ring without a restart;
//!   [`secret_matches`]: how many requests each secret version verified;
//!   [`key_status`]: what `hookinbox keys status` shows of both.
//!
//! No secret's value reaches a log, an error or a metric: each file names
//! the field a secret came from, never its text.

pub(crate) mod basic_auth;
pub(crate) mod encryption;
pub(crate) mod key_file;
pub(crate) mod key_reload;
pub(crate) mod key_status;
pub(crate) mod learned;
pub(crate) mod secret_matches;
pub(crate) mod secret_rules;
