//! How far re-sealing records under the active key has come (`rewrap_batch`
//! on either store): a caller loops, one short transaction per batch,
//! until nothing remains.

/// What one `rewrap_batch` did, and what is left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RewrapProgress {
    /// Rows re-sealed under the active key by this batch.
    pub rewrapped: u64,
    /// Rows still not under the active key after it (plain ones included).
    pub remaining: u64,
}

impl RewrapProgress {
    /// Every row is under the active key.
    pub fn is_done(&self) -> bool {
        self.remaining == 0
    }
}
