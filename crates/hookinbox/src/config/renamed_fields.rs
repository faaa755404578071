//! Fields renamed when every duration became a humantime string: an old
//! name is refused (the file's shape is strict), with a hint that says what
//! replaced it instead of only listing the names expected.

/// Old name → (new name, the new spelling of its default).
const RENAMED: &[(&str, &str, &str)] = &[
    ("header_read_timeout_ms", "header_read_timeout", "\"10s\""),
    ("body_read_timeout_ms", "body_read_timeout", "\"30s\""),
    ("body_rate_grace_ms", "body_rate_grace", "\"2s\""),
    ("linger_timeout_ms", "linger_timeout", "\"5s\""),
    ("shutdown_grace_ms", "shutdown_grace", "\"10s\""),
    ("handshake_timeout_ms", "handshake_timeout", "\"10s\""),
    ("busy_timeout_ms", "busy_timeout", "\"2s\""),
    ("lease_ms", "lease", "\"30s\""),
    ("poll_ms", "poll_interval", "\"250ms\""),
    ("rescue_interval_ms", "rescue_interval", "\"5s\""),
    ("timeout_ms", "timeout", "\"5s\""),
    ("retry_base_ms", "retry_base", "\"1s\""),
    ("retry_cap_ms", "retry_cap", "\"1h\""),
    ("tolerance_seconds", "tolerance", "\"5m\""),
    ("redelivery_window_seconds", "redelivery_window", "\"3d\""),
];

/// For serde's "unknown field `lease_ms`, expected …" message, what to write
/// instead: "`lease_ms` is now `lease`, a duration such as \"30s\"".
pub fn hint(parser_message: &str) -> Option<String> {
    let unknown = parser_message
        .strip_prefix("unknown field `")?
        .split('`')
        .next()?;
    let (old, new, example) = RENAMED.iter().find(|(old, _, _)| *old == unknown)?;
    Some(format!(
        "`{old}` is now `{new}`, a duration such as {example} (`{new} = {example}`)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_names_get_their_new_spelling() {
        let message = "unknown field `lease_ms`, expected one of `lease`, `poll_interval`";
        assert_eq!(
            hint(message).as_deref(),
            Some("`lease_ms` is now `lease`, a duration such as \"30s\" (`lease = \"30s\"`)")
        );
        assert_eq!(hint("unknown field `leese`, expected `lease`"), None);
        assert_eq!(hint("invalid type: integer"), None);
    }
}
