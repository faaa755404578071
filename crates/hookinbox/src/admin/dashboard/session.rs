//! Dashboard sessions: a browser that presented the admin token (or, with
//! no token configured, pressed "continue") gets a random session id in an
//! `HttpOnly`, `SameSite=Strict` cookie, and the session holds the CSRF
//! token its forms carry. Sessions live in this process's memory: a
//! restart signs everyone out, and logout ends one for good (a signed
//! cookie would stay valid until it expired).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::TryRngCore;
use subtle::ConstantTimeEq;

/// The session cookie's name.
pub const COOKIE: &str = "hookinbox_session";
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

/// The sessions of this process.
#[derive(Debug, Default)]
pub struct Sessions {
    by_id: Mutex<HashMap<String, Session>>,
    started: std::sync::atomic::AtomicU64,
}

impl Sessions {
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

/// The session id in a `Cookie` header, if there is one.
pub fn cookie_value(header: &str) -> Option<&str> {
    header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_found_by_its_id_until_it_ends() {
        let sessions = Sessions::default();
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
        let sessions = Sessions::default();
        let first = sessions.start().unwrap().0;
        for _ in 0..MAX_SESSIONS {
            sessions.start().unwrap();
        }
        assert!(sessions.get(&first).is_none());
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        assert_eq!(cookie_value("a=1; hookinbox_session=abc; b=2"), Some("abc"));
        assert_eq!(cookie_value("hookinbox_sessionx=abc"), None);
        assert_eq!(cookie_value(""), None);
    }
}
