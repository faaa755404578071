//! Reading the body: never more than the endpoint's limit, refusing a
//! declared oversize before reading a byte, and an overflowing stream as soon
//! as it crosses the limit.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderMap};
use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use super::rejection::Rejection;

/// Refuses a request whose `Content-Length` already exceeds `limit`.
pub fn check_declared_length(headers: &HeaderMap, limit: usize) -> Result<(), Rejection> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(length) if length > limit as u64 => Err(Rejection::TooLarge),
        _ => Ok(()),
    }
}

/// Reads at most `limit` bytes of body within `timeout`.
pub async fn read_capped(body: Body, limit: usize, timeout: Duration) -> Result<Bytes, Rejection> {
    let collect = Limited::new(body, limit).collect();
    match tokio::time::timeout(timeout, collect).await {
        Err(_) => Err(Rejection::BodyRead),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => {
            Err(Rejection::TooLarge)
        }
        Ok(Err(_)) => Err(Rejection::BodyRead),
    }
}
