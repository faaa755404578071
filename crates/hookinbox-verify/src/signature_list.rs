//! A signature header made of `key=value` items — Stripe's
//! `t=…,v1=…,v1=…`, Paddle's `ts=…;h1=…` — holding a timestamp and any
//! number of signatures (several while the sender rotates its secret).
//!
//! Reading the items is the same for every such scheme and lives here; what
//! a scheme makes of them (how many timestamps it tolerates, which refusal an
//! absent signature item is) is a fact of that scheme and stays in its
//! adapter.

use crate::signature_header::required;
use crate::{encoding, Algorithm, Candidate, Headers, Refusal};

/// Where a scheme's items are and what their keys mean. Items of other keys
/// are ignored: schemes reserve them for other versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignatureList<'a> {
    /// The header's name as the provider documents it.
    pub name: &'a str,
    /// What separates the items (`,` or `;`).
    pub separator: char,
    /// The key of the timestamp item, in integer unix seconds (`t`).
    pub timestamp_key: &'a str,
    /// The key of a hex signature item (`v1`).
    pub signature_key: &'a str,
    pub algorithm: Algorithm,
}

/// The items of one header, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedSignatures {
    /// Every timestamp item, in order.
    pub timestamps: Vec<i64>,
    /// The signature items that decode as hex; empty only when the header
    /// has no signature item at all.
    pub candidates: Vec<Candidate>,
}

impl SignatureList<'_> {
    /// Reads the header: absent is `missing_signature`; an item without
    /// `=`, a timestamp that is not integer seconds, or signature items none
    /// of which is hex, `malformed_signature`. Undecodable signature items
    /// beside a decodable one are skipped.
    pub fn read(&self, headers: &Headers) -> Result<ListedSignatures, Refusal> {
        let header = required(headers, self.name)?;
        let mut signature_items = 0usize;
        let mut listed = ListedSignatures {
            timestamps: Vec::new(),
            candidates: Vec::new(),
        };
        for item in header.split(self.separator) {
            let (key, value) = item.split_once('=').ok_or_else(|| {
                Refusal::malformed_signature(format!("{} item without `=`", self.name))
            })?;
            let key = key.trim();
            if key == self.timestamp_key {
                let seconds = encoding::unix_seconds(value, key).map_err(|_| {
                    Refusal::malformed_signature(format!("{} `{key}` is not an integer", self.name))
                })?;
                listed.timestamps.push(seconds);
            } else if key == self.signature_key {
                signature_items += 1;
                if let Some(bytes) = encoding::hex_signature(value) {
                    listed
                        .candidates
                        .push(Candidate::new(self.algorithm, bytes));
                }
            }
        }
        if signature_items > 0 && listed.candidates.is_empty() {
            return Err(Refusal::malformed_signature(format!(
                "no {} `{}` value is hex",
                self.name, self.signature_key
            )));
        }
        Ok(listed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Reason;

    const LIST: SignatureList<'static> = SignatureList {
        name: "X-Sig",
        separator: ',',
        timestamp_key: "t",
        signature_key: "v1",
        algorithm: Algorithm::HmacSha256,
    };

    fn read(value: &str) -> Result<ListedSignatures, Reason> {
        let headers: Headers = [("x-sig", value)].into_iter().collect();
        LIST.read(&headers).map_err(|refusal| refusal.reason)
    }

    #[test]
    fn items_are_sorted_by_key() {
        let listed = read("t=5, v1=0a ,v0=ff,v1=zz,t=6").unwrap();
        assert_eq!(listed.timestamps, [5, 6]);
        assert_eq!(
            listed.candidates,
            [Candidate::new(Algorithm::HmacSha256, vec![0x0a])]
        );
    }

    #[test]
    fn refusals() {
        let headers = Headers::new();
        assert_eq!(
            LIST.read(&headers).unwrap_err().reason,
            Reason::MissingSignature
        );
        for bad in ["t=5,v1", "t=5.0,v1=00", "garbage", "t=5,v1=zz,v1=0"] {
            assert_eq!(read(bad).unwrap_err(), Reason::MalformedSignature, "{bad}");
        }
        // Which items a scheme requires is up to the scheme.
        assert_eq!(read("v0=00").unwrap().candidates, []);
    }
}
