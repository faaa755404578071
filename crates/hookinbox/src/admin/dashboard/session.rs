//! Dashboard sessions: a browser that presented the admin token (or, with
//! no token configured, pressed "continue") gets a random session id in an
//! `HttpOnly`, `SameSite=Strict` cookie, and the session holds the CSRF
//! token its forms carry. Sessions live in this process's memory: a
//! restart signs everyone out, and logout ends one for good (a signed
//! cookie would stay valid until it expired).
//!
//! Browsers keep cookies per host, not per port, so two instances on one
//! host (`serve --admin-listen`) would overwrite each other's cookie under
//! one name, and signing in to one would sign the other out. The cookie's
//! name therefore carries the admin listener's port: `hookinbox_session_9090`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::TryRngCore;
use subtle::ConstantTimeEq;

/// The session cookie's name before the listener's port.
const COOKIE_PREFIX: &str = "hookinbox_session_";
/// How long a session lasts after sign-in.
pub const LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// Most sessions at once; the oldest goes first beyond it.
const MAX_SESSIONS: usize = 64;

/// One signed-in browser.
#[derive(Debug, Clone)]
pub struct Session {
    /// The token every form of this session carries (`csrf`).
    pub csrf: String,
    expires_at: Instant,
    /// Order of sign-in, to tell the oldest apart (instants may be equal).
    serial: u64,
}

impl Session {
    /// Whether a form's `csrf` field is this session's (constant time).
    pub fn csrf_matches(&self, presented: &str) -> bool {
        !presented.is_empty() && bool::from(presented.as_bytes().ct_eq(self.csrf.as_bytes()))
    }
}

/// The sessions of one admin listener.
#[derive(Debug)]
pub struct Sessions {
    by_id: Mutex<HashMap<String, Session>>,
    started: std::sync::atomic::AtomicU64,
    /// `hookinbox_session_{port}`.
    cookie: String,
}

impl Sessions {
    /// No sessions yet, for the admin listener bound to `port`.
    pub fn for_port(port: u16) -> Sessions {
        Sessions {
            by_id: Mutex::default(),
            started: Default::default(),
            cookie: format!("{COOKIE_PREFIX}{port}"),
        }
    }

    /// The session cookie's name.
    pub fn cookie(&self) -> &str {
        &self.cookie
    }

    /// This listener's session id in a `Cookie` header, if there is one.
    pub fn cookie_value<'a>(&self, header: &'a str) -> Option<&'a str> {
        cookie_value(header, &self.cookie)
    }

    /// A new session: its id (for the cookie) and the session. `None` when
    /// the system has no randomness to give, which no session may do without.
    pub fn start(&self) -> Option<(String, Session)> {
        let id = random_hex()?;
        let session = Session {
            csrf: random_hex()?,
            expires_at: Instant::now() + LIFETIME,
            serial: self
                .started
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        };
        let mut by_id = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        by_id.retain(|_, session| session.expires_at > now);
        if by_id.len() >= MAX_SESSIONS {
            let oldest = by_id
                .iter()
                .min_by_key(|(_, session)| session.serial)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                by_id.remove(&oldest);
            }
        }
        by_id.insert(id.clone(), session.clone());
        Some((id, session))
    }

    /// The live session of a cookie value.
    pub fn get(&self, id: &str) -> Option<Session> {
        let by_id = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        by_id
            .get(id)
            .filter(|session| session.expires_at > Instant::now())
            .cloned()
    }

    /// Ends a session.
    pub fn end(&self, id: &str) {
        let mut by_id = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        by_id.remove(id);
    }
}

/// 32 random bytes from the OS, in hex.
fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.try_fill_bytes(&mut bytes).ok()?;
    Some(hex_encode(&bytes))
}

fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The value of the cookie `name` in a `Cookie` header, if there is one.
fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(found, _)| *found == name)
        .map(|(_, value)| value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_found_by_its_id_until_it_ends() {
        let sessions = Sessions::for_port(9090);
        let (id, session) = sessions.start().unwrap();
        assert_eq!(id.len(), 64);
        assert_ne!(id, session.csrf);
        let found = sessions.get(&id).unwrap();
        assert!(found.csrf_matches(&session.csrf));
        assert!(!found.csrf_matches(""));
        assert!(!found.csrf_matches(&id));
        sessions.end(&id);
        assert!(sessions.get(&id).is_none());
    }

    #[test]
    fn the_oldest_session_makes_room() {
        let sessions = Sessions::for_port(9090);
        let first = sessions.start().unwrap().0;
        for _ in 0..MAX_SESSIONS {
            sessions.start().unwrap();
        }
        assert!(sessions.get(&first).is_none());
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let sessions = Sessions::for_port(9090);
        let value = |header| sessions.cookie_value(header);
        assert_eq!(value("a=1; hookinbox_session_9090=abc; b=2"), Some("abc"));
        assert_eq!(value("hookinbox_session_90900=abc"), None);
        assert_eq!(value(""), None);
    }

    /// Two instances on one host: each reads only its own cookie from the
    /// header a browser sends both of them.
    #[test]
    fn the_cookie_is_named_for_the_listeners_port() {
        let (first, second) = (Sessions::for_port(9090), Sessions::for_port(9091));
        assert_eq!(first.cookie(), "hookinbox_session_9090");
        assert_eq!(second.cookie(), "hookinbox_session_9091");
        let header = "hookinbox_session_9090=one; hookinbox_session_9091=two";
        assert_eq!(first.cookie_value(header), Some("one"));
        assert_eq!(second.cookie_value(header), Some("two"));
    }
}
