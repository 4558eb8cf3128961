//! The accept loop: HTTP/1.1 and HTTP/2 (prior knowledge) through hyper-util, a limit on open connections (a
//! semaphore: beyond it new connections wait in the listen backlog), a deadline for a request's headers (a client
//! that is silent or slow before its headers are complete is disconnected), and a graceful shutdown that stops
//! accepting and drains the requests in flight.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::metrics::Metrics;

/// Connection limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Open connections at most.
    pub max_connections: usize,
    /// Deadline for a request's headers, from the connection (or the previous response) on.
    pub header_read_timeout: Duration,
}

/// Serves `app` on `listener` until `shutdown` completes, then waits for the open connections to finish their
/// requests (idle keep-alive connections are closed at once).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    builder.http2().timer(TokioTimer::new());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the connection semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Per-connection failures (reset before accept) and resource exhaustion (EMFILE): pause briefly.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let _open = metrics.connection_opened();
            if !first_bytes(&stream, limits.header_read_timeout).await {
                return;
            }
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Waits until the client has sent enough for hyper to tell HTTP/1 from HTTP/2 (that sniffing has no deadline of
/// its own); false when it closes or stays silent past `within`.
async fn first_bytes(stream: &TcpStream, within: Duration) -> bool {
    const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let sniff = async {
        let mut buf = [0u8; 24];
        loop {
            let n = stream.peek(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            if n == buf.len() || buf[..n] != H2_PREFACE[..n] {
                return Some(());
            }
            // A prefix of the HTTP/2 preface: wait for the rest.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    matches!(tokio::time::timeout(within, sniff).await, Ok(Some(())))
}
