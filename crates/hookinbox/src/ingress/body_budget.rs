//! The global in-flight body budget: the bytes of body buffers held by
//! requests that are being read, verified or committed, across all
//! connections. Buffer memory is claimed from it *before* it is allocated;
//! when the budget is spent the request is answered 503 + `Retry-After`
//! instead of growing the process.
//!
//! A body's buffer grows with what has arrived (see `body.rs`), so a
//! declared `Content-Length` costs nothing until its bytes come: a client
//! holds budget, and memory, in proportion to what it has sent.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The budget shared by every request of a listener.
#[derive(Debug, Clone)]
pub struct BodyBudget {
    bytes: Arc<Semaphore>,
}

/// The budget is spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the in-flight body budget is spent")]
pub struct BudgetSpent;

/// Bytes of budget one request holds; given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: BodyBudget,
    permit: Option<OwnedSemaphorePermit>,
}

impl BodyBudget {
    pub fn new(total_bytes: usize) -> BodyBudget {
        BodyBudget {
            bytes: Arc::new(Semaphore::new(total_bytes.min(Semaphore::MAX_PERMITS))),
        }
    }

    /// An empty reservation to grow.
    pub fn reservation(&self) -> Reservation {
        Reservation {
            budget: self.clone(),
            permit: None,
        }
    }

    /// Bytes not reserved by anyone.
    #[cfg(test)]
    pub fn available(&self) -> usize {
        self.bytes.available_permits()
    }
}

impl Reservation {
    /// Claims `more` bytes, or none of them.
    pub fn grow(&mut self, more: usize) -> Result<(), BudgetSpent> {
        if more == 0 {
            return Ok(());
        }
        let more_u32 = u32::try_from(more).map_err(|_| BudgetSpent)?;
        let permit = Arc::clone(&self.budget.bytes)
            .try_acquire_many_owned(more_u32)
            .map_err(|_| BudgetSpent)?;
        metrics::gauge!("hookinbox_inflight_body_bytes").increment(more as f64);
        match &mut self.permit {
            Some(held) => held.merge(permit),
            None => self.permit = Some(permit),
        }
        Ok(())
    }

    /// Bytes this reservation holds.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.permit.as_ref().map_or(0, |p| p.num_permits())
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            metrics::gauge!("hookinbox_inflight_body_bytes").decrement(permit.num_permits() as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_share_one_budget_and_give_it_back_when_dropped() {
        let budget = BodyBudget::new(100);
        let mut first = budget.reservation();
        first.grow(60).unwrap();
        let mut second = budget.reservation();
        assert_eq!(second.grow(41), Err(BudgetSpent), "all or nothing");
        second.grow(40).unwrap();
        assert_eq!(budget.available(), 0);
        assert_eq!((first.bytes(), second.bytes()), (60, 40));
        drop(first);
        assert_eq!(budget.available(), 60);
        second.grow(60).unwrap();
        assert_eq!(second.bytes(), 100);
    }
}
