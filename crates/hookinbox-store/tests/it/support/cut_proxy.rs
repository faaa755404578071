//! A TCP proxy on 127.0.0.1 between a store and PostgreSQL whose line a
//! test can cut and mend: the database "lost" without stopping the
//! machine's server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct CutProxy {
    pub addr: SocketAddr,
    cut: Arc<AtomicBool>,
    /// Connections currently forwarded.
    open: Arc<AtomicUsize>,
    /// Bumped at every cut: open connections watch it and close.
    generation: watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl CutProxy {
    /// Proxies to `upstream` (host:port).
    pub async fn start(upstream: String) -> CutProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let open = Arc::new(AtomicUsize::new(0));
        let (generation, _) = watch::channel(0u64);
        let task = tokio::spawn({
            let cut = Arc::clone(&cut);
            let open = Arc::clone(&open);
            let generation = generation.clone();
            async move {
                loop {
                    let Ok((client, _)) = listener.accept().await else {
                        return;
                    };
                    if cut.load(Ordering::SeqCst) {
                        drop(client); // refused while cut
                        continue;
                    }
                    let upstream = upstream.clone();
                    let mut closed = generation.subscribe();
                    // A cut between the check above and the subscription
                    // would not be seen by it: look again.
                    if cut.load(Ordering::SeqCst) {
                        continue;
                    }
                    let open = Arc::clone(&open);
                    open.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(async move {
                        if let Ok(mut server) = TcpStream::connect(&upstream).await {
                            let mut client = client;
                            tokio::select! {
                                _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                                _ = closed.changed() => {}
                            }
                        }
                        open.fetch_sub(1, Ordering::SeqCst);
                    });
                }
            }
        });
        CutProxy {
            addr,
            cut,
            open,
            generation,
            task,
        }
    }

    /// Closes every open connection and refuses new ones until `mend`;
    /// returns once every connection is closed.
    pub async fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        self.generation.send_modify(|generation| *generation += 1);
        tokio::time::timeout(Duration::from_secs(5), async {
            while self.open.load(Ordering::SeqCst) > 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("the proxy's connections close");
    }

    pub fn mend(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
