//! A key ring: the trusted secret versions of one endpoint. Current and
//! previous versions are both tried during a rotation; each may carry a
//! validity window so a retired secret stops being trusted on its own.

use crate::Key;

/// One secret version of an endpoint.
#[derive(Debug, Clone)]
pub struct SecretVersion {
    /// The operator's name for this version; recorded with every event it verified.
    pub version: String,
    pub key: Key,
    /// Trusted from this unix second on (inclusive), when set.
    pub not_before: Option<i64>,
    /// Trusted up to this unix second (inclusive); retired after it.
    pub not_after: Option<i64>,
}

impl SecretVersion {
    pub fn new(version: impl Into<String>, key: Key) -> Self {
        SecretVersion {
            version: version.into(),
            key,
            not_before: None,
            not_after: None,
        }
    }

    /// Whether this version is trusted at `now`.
    pub fn is_active(&self, now: i64) -> bool {
        self.not_before.is_none_or(|start| now >= start)
            && self.not_after.is_none_or(|end| now <= end)
    }
}

/// The secret versions of one endpoint, in order of preference.
#[derive(Debug, Clone, Default)]
pub struct KeyRing {
    versions: Vec<SecretVersion>,
}

impl KeyRing {
    pub fn new(versions: Vec<SecretVersion>) -> Self {
        KeyRing { versions }
    }

    pub fn versions(&self) -> &[SecretVersion] {
        &self.versions
    }

    /// The versions trusted at `now`, in order of preference.
    pub fn active(&self, now: i64) -> impl Iterator<Item = &SecretVersion> {
        self.versions.iter().filter(move |v| v.is_active(now))
    }

    pub fn is_empty(&self) -> bool {
        self.versions.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_bounds_are_inclusive() {
        let mut v = SecretVersion::new("1", Key::hmac_from_utf8("k").unwrap());
        v.not_before = Some(100);
        v.not_after = Some(200);
        assert!(!v.is_active(99));
        assert!(v.is_active(100));
        assert!(v.is_active(200));
        assert!(!v.is_active(201));
    }
}
