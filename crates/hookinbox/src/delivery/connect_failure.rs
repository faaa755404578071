//! How a failed connection to an `http` target is described on its
//! delivery row (`last_error`, docs/architecture.md §5).
//!
//! "connect error" alone leaves an operator guessing between a service that
//! is down, a firewall that drops packets and a misspelt host. The kind of
//! the I/O error under the client's error says which, from a closed list of
//! fixed strings: the error's own text is never used, as it could carry the
//! URL or the address (the row is shown to anyone who can read events).

use std::io::ErrorKind;

/// `connect error: connection refused`, `…: timed out`, `…: dns lookup
/// failed`, …, or plain `connect error` when the cause is none of those.
pub fn describe(error: &(dyn std::error::Error + 'static)) -> &'static str {
    let mut next = Some(error);
    let mut dns = false;
    while let Some(error) = next {
        // hyper-util's connector names the step that failed ("dns error",
        // "tcp connect error") and keeps the I/O error as its source.
        dns |= error.to_string() == "dns error";
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            if let Some(reason) = reason(io.kind()) {
                return reason;
            }
            // io::Error's `source()` skips the error it wraps.
            next = io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static));
            continue;
        }
        next = error.source();
    }
    if dns {
        "connect error: dns lookup failed"
    } else {
        "connect error"
    }
}

fn reason(kind: ErrorKind) -> Option<&'static str> {
    Some(match kind {
        ErrorKind::ConnectionRefused => "connect error: connection refused",
        ErrorKind::TimedOut => "connect error: timed out",
        ErrorKind::ConnectionReset => "connect error: connection reset",
        ErrorKind::HostUnreachable => "connect error: host unreachable",
        ErrorKind::NetworkUnreachable => "connect error: network unreachable",
        ErrorKind::AddrNotAvailable => "connect error: address not available",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::fmt;

    use super::*;

    /// hyper-util's `ConnectError`: a fixed step name over its cause.
    #[derive(Debug)]
    struct Step(&'static str, std::io::Error);

    impl fmt::Display for Step {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Step {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.1)
        }
    }

    fn described(step: &'static str, io: std::io::Error) -> &'static str {
        describe(&Step(step, io))
    }

    #[test]
    fn the_io_kind_names_the_failure() {
        let io = |kind| std::io::Error::new(kind, "at http://secret.internal:9000/x");
        assert_eq!(
            described("tcp connect error", io(ErrorKind::ConnectionRefused)),
            "connect error: connection refused"
        );
        assert_eq!(
            described("tcp connect error", io(ErrorKind::TimedOut)),
            "connect error: timed out"
        );
        assert_eq!(
            described("tcp connect error", io(ErrorKind::HostUnreachable)),
            "connect error: host unreachable"
        );
    }

    #[test]
    fn a_failed_lookup_is_named_without_the_host() {
        let lookup = std::io::Error::other("failed to lookup address information: billing.internl");
        assert_eq!(
            described("dns error", lookup),
            "connect error: dns lookup failed"
        );
    }

    #[test]
    fn anything_else_stays_a_plain_connect_error() {
        let other = std::io::Error::other("http://secret.internal:9000/x");
        assert_eq!(described("tcp open error", other), "connect error");
    }
}
