//! The agent's front door: accepts TCP connections and serves HTTP/1.1 on
//! them with a header-read timeout, an idle timeout and a cap on connections,
//! so slow or idle clients cannot hold the agent's connections, and a cap
//! per peer address, so one client's flood leaves connections for the rest.
//!
//! `axum::serve` exposes none of these, so connections are served with
//! hyper's own HTTP/1 builder (its `header_read_timeout`) and a tokio
//! semaphore. The idle timeout is ours (hyper has none); since hyper's header
//! timer also runs while a kept-alive connection waits for its next request,
//! a connection with no request in progress is closed after the shorter of
//! the two.
//!
//! A request counts as in progress until its response body is sent, not
//! when its headers are: a streaming response (the executor API's
//! SUBSCRIBE) keeps its connection busy, so it is neither idle nor closed
//! by the idle timeout, for as long as it streams ([`hold`]).

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;
use tower::Service;

/// Limits of the front door (from the agent's flags).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A request's header must be complete within this.
    pub header_read_timeout: Duration,
    /// A connection with no request in progress is closed after this.
    pub idle_timeout: Duration,
    /// Connections served at once; more wait in the listen backlog.
    pub max_connections: u32,
    /// Connections served at once from one peer address; more are closed
    /// as soon as they are accepted.
    pub max_connections_per_peer: u32,
}

/// Connections open per peer address.
type PeerCounts = Arc<std::sync::Mutex<HashMap<IpAddr, u32>>>;

/// One connection of a peer; released on drop.
struct PeerSlot {
    counts: PeerCounts,
    peer: IpAddr,
}

impl PeerSlot {
    /// Counts a connection of `peer`, or None if it already has `max`.
    fn take(counts: &PeerCounts, peer: IpAddr, max: u32) -> Option<PeerSlot> {
        let mut map = counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = map.entry(peer).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            counts: Arc::clone(counts),
            peer,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut map = self
            .counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = map.get_mut(&self.peer) {
            *count -= 1;
            if *count == 0 {
                map.remove(&self.peer);
            }
        }
    }
}

/// Requests in progress on one connection and when the last one ended.
#[derive(Debug, Clone, Copy)]
struct Activity {
    in_flight: usize,
    since: Instant,
}

/// Marks a request in progress until dropped (also when its future is
/// cancelled because the client went away).
struct InFlight(watch::Sender<Activity>);

impl InFlight {
    fn begin(tx: &watch::Sender<Activity>) -> InFlight {
        tx.send_modify(|a| a.in_flight += 1);
        InFlight(tx.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.send_modify(|a| {
            a.in_flight -= 1;
            a.since = Instant::now();
        });
    }
}

/// A response body that keeps `guard` alive until the body is sent (or
/// dropped because the client went away): a request's in-flight mark, a
/// subject's request slot. A streaming response holds them for the
/// stream's life, not only until its headers go out.
pub fn hold<G: Send + Sync + Unpin + 'static>(body: Body, guard: G) -> Body {
    Body::new(Held {
        body,
        _guard: guard,
    })
}

/// [`hold`] for a streaming response only: Content-Type
/// `application/recordio` (attach streams), or a body whose length is not
/// known up front (the executor's SUBSCRIBE stream, whose Content-Type is
/// the message format's): its guard lasts as long as the stream. Any other response drops the guard once its headers
/// are out, so a client that never reads a large body cannot keep the
/// connection "in flight" (and out of reach of the idle timeout) or keep a
/// subject's slot.
pub fn hold_if_streaming<G: Send + Sync + Unpin + 'static>(
    response: axum::response::Response,
    guard: G,
) -> axum::response::Response {
    let streaming = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case(APPLICATION_RECORDIO))
        });
    if streaming
        || http_body::Body::size_hint(response.body())
            .exact()
            .is_none()
    {
        response.map(|body| hold(body, guard))
    } else {
        drop(guard);
        response
    }
}

use super::negotiation::APPLICATION_RECORDIO;

struct Held<G> {
    body: Body,
    _guard: G,
}

impl<G: Unpin> http_body::Body for Held<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Resolves once the connection has had no request in progress for `idle`.
async fn idle_for(mut rx: watch::Receiver<Activity>, idle: Duration) {
    loop {
        let now = *rx.borrow_and_update();
        if now.in_flight > 0 {
            if rx.changed().await.is_err() {
                return std::future::pending().await;
            }
            continue;
        }
        tokio::select! {
            changed = rx.changed() => {
                if changed.is_err() {
                    return std::future::pending().await;
                }
            }
            _ = tokio::time::sleep_until(now.since + idle) => return,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections as usize));
    let peers = PeerCounts::default();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let builder = Arc::new(builder);
    tokio::pin!(shutdown);
    loop {
        // Take a slot before accepting: beyond the cap, clients wait in the
        // kernel's backlog instead of holding a served connection.
        let permit = tokio::select! {
            permit = Arc::clone(&slots).acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => return,
            },
            () = &mut shutdown => return,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => return,
        };
        let Some(peer_slot) = PeerSlot::take(&peers, peer.ip(), limits.max_connections_per_peer)
        else {
            // Closed unserved (the slot is free again at once): the
            // remaining connections stay for other peers.
            tracing::info!(%peer, max = limits.max_connections_per_peer,
                "too many connections from one peer; closing");
            drop(stream);
            continue;
        };
        let builder = Arc::clone(&builder);
        let router = router.clone();
        tokio::spawn(async move {
            let (tx, rx) = watch::channel(Activity {
                in_flight: 0,
                since: Instant::now(),
            });
            let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let guard = InFlight::begin(&tx);
                let mut router = router.clone();
                async move {
                    let response = router.call(request).await;
                    response.map(|r| hold_if_streaming(r, guard))
                }
            });
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let idle = idle_for(rx, limits.idle_timeout);
            tokio::pin!(idle);
            let mut closing = false;
            let grace = tokio::time::sleep(limits.idle_timeout);
            tokio::pin!(grace);
            loop {
                tokio::select! {
                    result = connection.as_mut() => {
                        if let Err(e) = result {
                            tracing::debug!(%peer, error = %e, "connection ended");
                        }
                        break;
                    }
                    () = &mut idle, if !closing => {
                        tracing::debug!(%peer, "closing an idle connection");
                        connection.as_mut().graceful_shutdown();
                        closing = true;
                        grace.as_mut().reset(tokio::time::Instant::now() + limits.idle_timeout);
                    }
                    // A response the client never reads keeps a graceful
                    // shutdown waiting: after one more idle period, drop it.
                    () = &mut grace, if closing => {
                        tracing::debug!(%peer, "dropping a connection that would not close");
                        break;
                    }
                }
            }
            drop(peer_slot);
            drop(permit);
        });
    }
}
