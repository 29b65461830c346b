//! How fast one authority drains work through an `http` handler: N effects enqueued on a
//! memory store (so the store costs little), then one authority POSTs each attempt to a
//! local server that answers `{"ok":null}`, and the clock runs until every item has
//! succeeded. The server is a keep-alive HTTP/1.1 server on the same tokio runtime, so the
//! figure is the whole loop on one machine — claim, POST, read the answer, fenced
//! complete — not the client alone.
//!
//! ```text
//! cargo run --release --locked --example http_throughput -- --items 20000 --concurrency 16
//! ```

use std::time::{Duration, Instant};

use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use leasehold::authority::external::{Endpoint, HttpHandler};
use leasehold::authority::{Authority, AuthorityConfig};
use leasehold::model::HandlerVersion;
use leasehold::model::WorkState;
use leasehold::model::work::NewWork;
use leasehold::store::url::{OpenMode, open};
use tokio::net::TcpListener;

const HANDLER: &str = "charge";
const ANSWER: &[u8] = br#"{"ok":null}"#;

#[derive(Parser)]
struct Args {
    /// Effects to drain.
    #[arg(long, default_value_t = 20_000)]
    items: usize,
    /// The authority's worker concurrency: requests in flight at once.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 300)]
    timeout: u64,
}

#[tokio::main]
async fn main() {
    if let Err(e) = run(Args::parse()).await {
        eprintln!("http_throughput: {e}");
        std::process::exit(2);
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/charge", listener.local_addr()?);
    tokio::spawn(serve(listener));

    let store = open("memory", OpenMode::ReadWrite)?;
    let version = HandlerVersion::parse("1.0.0")?;
    let specs: Vec<NewWork> = (0..args.items)
        .map(|i| NewWork::effect(format!("post-{i:09}"), HANDLER, "{}"))
        .collect();
    for chunk in specs.chunks(1_000) {
        store.enqueue_batch(chunk.to_vec(), &version)?;
    }

    let mut config = AuthorityConfig::new("http-bench", "v1");
    config.worker_concurrency = args.concurrency;
    let handler = HttpHandler::new(Endpoint::parse(&url, false)?, &version, 60_000, true);
    let started = Instant::now();
    let authority = Authority::builder(store.clone(), config)
        .handler(HANDLER, "1.0.0", handler)
        .start()
        .await?;
    let deadline = started + Duration::from_secs(args.timeout);
    loop {
        let succeeded: u64 = store
            .overview()?
            .work
            .iter()
            .filter(|c| c.state == WorkState::Succeeded)
            .map(|c| c.count)
            .sum();
        if succeeded >= args.items as u64 {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("{succeeded} of {} succeeded in time", args.items).into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let elapsed = started.elapsed();
    let stats = authority.shutdown().await?;
    println!(
        "{} items, concurrency {}: {:.2} s, {:.0} items/s ({} failed attempts)",
        args.items,
        args.concurrency,
        elapsed.as_secs_f64(),
        args.items as f64 / elapsed.as_secs_f64(),
        stats.retries + stats.failures + stats.uncertain
    );
    Ok(())
}

/// Answers every POST on every kept-alive connection with `{"ok":null}`.
async fn serve(listener: TcpListener) {
    while let Ok((stream, _)) = listener.accept().await {
        let _ = stream.set_nodelay(true);
        let connection =
            http1::Builder::new().serve_connection(TokioIo::new(stream), service_fn(answer));
        tokio::spawn(connection);
    }
}

async fn answer(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    request.into_body().collect().await?;
    Ok(Response::new(Full::new(Bytes::from_static(ANSWER))))
}
