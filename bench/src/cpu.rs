//! The generator's own CPU time, so a report says how much of the shared cores
//! the load generator took from the server.

/// User + system CPU seconds of this process so far, from `/proc/self/stat`
/// (Linux; `None` elsewhere). The kernel reports them in USER_HZ ticks, which
/// is 100 per second on every Linux ABI Rust targets.
pub fn process_seconds() -> Option<f64> {
    const USER_HZ: f64 = 100.0;
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name start at field 3 (state);
    // utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / USER_HZ)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_a_number_on_linux() {
        if cfg!(target_os = "linux") {
            let seconds = super::process_seconds().unwrap();
            assert!(seconds >= 0.0);
        }
    }
}
