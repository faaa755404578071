//! The timestamp window: a signed timestamp must be within `tolerance`
//! seconds of `now`, in both directions (a far-future timestamp is as
//! suspicious as an old one: it would extend a captured request's life).

/// How far a signed timestamp was from `now`: positive when it lies in the
/// past, negative when it lies in the future.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skew {
    pub seconds: i64,
}

/// Checks a signed timestamp against the window `[now - tolerance, now + tolerance]`.
/// The boundary itself is inside the window (300 s old with a 300 s tolerance passes;
/// 301 s does not).
pub fn check(signed_at: i64, now: i64, tolerance_seconds: u64) -> Result<Skew, Skew> {
    let skew = Skew {
        seconds: now.saturating_sub(signed_at),
    };
    if skew.seconds.unsigned_abs() <= tolerance_seconds {
        Ok(skew)
    } else {
        Err(skew)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundary_is_inclusive_both_ways() {
        assert!(check(1_000 - 300, 1_000, 300).is_ok());
        assert!(check(1_000 + 300, 1_000, 300).is_ok());
        assert_eq!(check(1_000 - 301, 1_000, 300), Err(Skew { seconds: 301 }));
        assert_eq!(check(1_000 + 301, 1_000, 300), Err(Skew { seconds: -301 }));
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        assert!(check(i64::MIN, i64::MAX, 300).is_err());
        assert!(check(i64::MAX, i64::MIN, 300).is_err());
    }
}
