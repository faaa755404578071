//! The small checks every section applies, each naming the field.

use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};
use std::time::Duration;

use serde::Serializer;

use super::ConfigError;

pub fn non_zero_usize(value: usize, field: &str) -> Result<NonZeroUsize, ConfigError> {
    NonZeroUsize::new(value).ok_or_else(|| must_be_positive(field))
}

pub fn non_zero_u32(value: u32, field: &str) -> Result<NonZeroU32, ConfigError> {
    NonZeroU32::new(value).ok_or_else(|| must_be_positive(field))
}

pub fn non_zero_u64(value: u64, field: &str) -> Result<NonZeroU64, ConfigError> {
    NonZeroU64::new(value).ok_or_else(|| must_be_positive(field))
}

/// A duration that must be longer than zero (a zero timeout or interval
/// would refuse everything, or spin).
pub fn positive(value: Duration, field: &str) -> Result<Duration, ConfigError> {
    if value.is_zero() {
        return Err(ConfigError::invalid(field, "must be longer than zero"));
    }
    Ok(value)
}

/// `value` when it is at most `max` (whole milliseconds in the error).
pub fn at_most(value: Duration, max: Duration, field: &str) -> Result<Duration, ConfigError> {
    if value <= max {
        Ok(value)
    } else {
        Err(ConfigError::invalid(
            field,
            format!("is at most {}ms", max.as_millis()),
        ))
    }
}

/// A duration used where only whole seconds exist (signed timestamps are
/// unix seconds): `"90s"` or `"5m"`, not `"1500ms"`.
pub fn whole_seconds(value: Duration, field: &str) -> Result<u64, ConfigError> {
    if value.subsec_nanos() != 0 {
        return Err(ConfigError::invalid(
            field,
            "must be whole seconds (signed timestamps are in seconds)",
        ));
    }
    Ok(value.as_secs())
}

fn must_be_positive(field: &str) -> ConfigError {
    ConfigError::invalid(field, "must be positive")
}

/// Serializes a list as the strings its items display as (addresses, URIs).
pub fn serialize_displayed<S, T>(items: &[T], serializer: S) -> Result<S::Ok, S::Error>
where
    S: Serializer,
    T: std::fmt::Display,
{
    serializer.collect_seq(items.iter().map(ToString::to_string))
}
