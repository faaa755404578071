//! The service hyper runs for one connection: it hands each request to the
//! router with the peer address attached, keeps the connection's activity
//! current for the accept loop, and ends the connection after its last
//! allowed request.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue, Request};
use axum::response::Response;
use axum::Router;
use hyper::body::Incoming;
use tower::ServiceExt;

use super::connection_slots::Activity;

pub struct PerConnection {
    router: Router,
    peer: SocketAddr,
    activity: Arc<Activity>,
    served: AtomicU32,
    max_requests: u32,
}

impl PerConnection {
    pub fn new(
        router: Router,
        peer: SocketAddr,
        activity: Arc<Activity>,
        max_requests: u32,
    ) -> PerConnection {
        PerConnection {
            router,
            peer,
            activity,
            served: AtomicU32::new(0),
            max_requests: max_requests.max(1),
        }
    }
}

/// Marks the request finished however its future ends (answered or dropped
/// because the client went away).
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.request_finished();
    }
}

impl hyper::service::Service<Request<Incoming>> for PerConnection {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let mut request = request.map(Body::new);
        request.extensions_mut().insert(ConnectInfo(self.peer));
        let last = self.served.fetch_add(1, Ordering::Relaxed) + 1 >= self.max_requests;
        self.activity.request_started();
        let in_flight = InFlight(Arc::clone(&self.activity));
        let router = self.router.clone();
        Box::pin(async move {
            let mut response = router.oneshot(request).await?;
            if last {
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            drop(in_flight);
            Ok(response)
        })
    }
}
