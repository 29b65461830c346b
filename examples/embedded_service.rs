//! An application that embeds leasehold: a small shop backend.
//!
//! - The effect handler `charge-card` calls a payment provider over HTTP with the
//!   attempt's idempotency key (so a retried or reclaimed attempt never charges twice), then
//!   reports the payment as an event.
//! - The workflow `order` reserves stock (the async action `reserve-stock`), then waits for
//!   that `payment-confirmed` event and completes with it.
//! - The producer side starts one workflow per order and, once the stock is reserved (the
//!   instance waits for its payment), enqueues the order's charge — like a shop whose
//!   customer pays after seeing the reservation. Both are idempotent, so running the
//!   program twice does not order or charge twice. (A wait sees only events that arrive
//!   after it began, so the charge must not run before the reservation.)
//!
//! The payment provider is played by a tiny HTTP server inside this process (it remembers
//! the idempotency keys it has seen and answers a repeat with the first charge).
//!
//! ```text
//! cargo run --example embedded_service -- --store shop.db --orders 20
//! cargo run --example embedded_service -- --store shop.db --instance shop-2 --serve
//! leasehold attach shop.db
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;
use leasehold::authority::{Attempt, Authority, AuthorityConfig, HandlerOutcome};
use leasehold::model::event::NewEvent;
use leasehold::model::work::NewWork;
use leasehold::model::{InstanceStatus, WorkState};
use leasehold::store::url::{OpenMode, open};
use leasehold::workflow::Catalog;
use leasehold::{Result, Store};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// The build label its authority registers under (shown to people; it decides nothing).
const BUILD: &str = "v1";

const ORDER_WORKFLOW: &str = r#"{
  "id": "order",
  "name": "Order",
  "description": "Reserve stock, wait for the payment, complete with it.",
  "inputs": [{ "id": "orderId", "valueType": "string", "required": true }],
  "bindings": [
    { "id": "reservation", "valueType": "object", "producedBy": "reserve" },
    { "id": "payment", "valueType": "object", "producedBy": "await-payment" }
  ],
  "entry": "reserve",
  "steps": [
    { "id": "reserve", "type": "action", "action": "reserve-stock",
      "arguments": { "orderId": { "ref": "orderId" } }, "next": "await-payment" },
    { "id": "await-payment", "type": "wait-event", "event": "payment-confirmed",
      "where": { "eq": [{ "ref": "EVENT", "path": ["orderId"] }, { "ref": "orderId" }] },
      "bind": { "payment": { "ref": "EVENT" } }, "next": "done" },
    { "id": "done", "type": "complete", "output": { "ref": "payment" } }
  ]
}"#;

#[derive(Parser)]
struct Args {
    /// The store: a SQLite path (created when missing) or postgres://….
    #[arg(long, default_value = "shop.db")]
    store: String,
    /// This authority's instance id.
    #[arg(long, default_value = "shop-1")]
    instance: String,
    /// Orders to place (order-1 … order-N); 0 places none.
    #[arg(long, default_value_t = 5)]
    orders: u32,
    /// Keep running until Ctrl-C instead of stopping once the orders are done.
    #[arg(long)]
    serve: bool,
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    if let Err(e) = run(args).await {
        eprintln!("embedded_service: {e}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> Result<()> {
    let url = args.store.clone();
    let store = blocking(move || open(&url, OpenMode::ReadWrite)).await?;
    let provider = PaymentProvider::start().await?;

    let config = AuthorityConfig::new(&args.instance, BUILD);
    let charge = {
        let (store, provider) = (store.clone(), provider.address.clone());
        move |attempt: Attempt| charge_card(attempt, store.clone(), provider.clone())
    };
    let authority = Authority::builder(store.clone(), config)
        .handler("charge-card", "1.0.0", charge)
        .handler("reserve-stock", "1.0.0", reserve_stock)
        .start()
        .await?;
    println!("{} running against {}", args.instance, args.store);

    let orders: Vec<String> = (1..=args.orders).map(|n| format!("order-{n}")).collect();
    let instances = place_orders(&store, &authority, &orders).await?;

    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        let done = checkout(&store, &authority, &orders, &instances).await?;
        if done && !args.serve {
            break;
        }
        tokio::select! {
            _ = &mut stop => break,
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    }
    let stats = authority.shutdown().await?;
    println!(
        "{}: {} orders done; this authority completed {} attempts ({} retries); provider charged {} card(s) for {} call(s)",
        args.instance,
        orders.len(),
        stats.completions,
        stats.retries,
        provider.charges(),
        provider.calls(),
    );
    Ok(())
}

/// The producer side: one workflow per order, idempotent on the order, started for the
/// versions of the handlers this service runs (so its authority, and any running a
/// compatible release, may run them). Answers the instances (a repeated start answers the
/// first one).
async fn place_orders(
    store: &Store,
    authority: &Authority,
    orders: &[String],
) -> Result<Vec<String>> {
    let store = store.clone();
    let versions = authority.handler_versions();
    let orders = orders.to_vec();
    blocking(move || {
        let catalog = Catalog {
            actions: [("reserve-stock".to_owned(), "Reserve stock".to_owned())].into(),
            events: ["payment-confirmed".to_owned()].into(),
            ..Catalog::default()
        };
        if let Err(diagnostics) = store.deploy_workflow(ORDER_WORKFLOW, &catalog)? {
            return Err(leasehold::Error::Invalid(format!("{diagnostics:?}")));
        }
        let mut instances = Vec::new();
        for order in &orders {
            let mut args = Map::new();
            args.insert("orderId".into(), json!(order));
            let started =
                store.start_workflow("order", args, "shop", Some(order), versions.clone())?;
            instances.push(started.instance_id);
        }
        Ok(instances)
    })
    .await
}

/// Enqueues the charge of every order whose stock is reserved (its instance waits for the
/// payment); answers whether every order is charged and complete.
async fn checkout(
    store: &Store,
    authority: &Authority,
    orders: &[String],
    instances: &[String],
) -> Result<bool> {
    let store = store.clone();
    let (orders, instances) = (orders.to_vec(), instances.to_vec());
    // The charge is stamped for this service's version of the handler that runs it; a
    // handler name this service does not register is refused (INVALID), never stamped.
    let versions = authority.handler_versions();
    blocking(move || {
        let mut all_done = true;
        for (order, instance) in orders.iter().zip(&instances) {
            let Some(row) = store.instance(instance)? else {
                continue;
            };
            let charge_id = format!("charge:{order}");
            let charge = store.work(&charge_id)?;
            if charge.is_none() && row.waiting_event.as_deref() == Some("payment-confirmed") {
                let payload = json!({ "orderId": order, "amountCents": 1999 }).to_string();
                store.enqueue(
                    NewWork::effect(&charge_id, "charge-card", payload),
                    &versions,
                )?;
            }
            let charged = charge.is_some_and(|w| w.state == WorkState::Succeeded);
            all_done &= charged && row.status == InstanceStatus::Completed;
        }
        Ok(all_done)
    })
    .await
}

/// Charges the card once per idempotency key, then reports the payment as an event.
async fn charge_card(attempt: Attempt, store: Store, provider: String) -> HandlerOutcome {
    let order = attempt.payload["orderId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let body = attempt.payload.to_string();
    let answer = tokio::select! {
        answer = post(&provider, "/charges", &attempt.idempotency_key, &body) => answer,
        // Another authority owns the item now: stop; our answer would be refused anyway.
        () = attempt.lease_lost() => return HandlerOutcome::Uncertain,
    };
    let charge: Value = match answer {
        Ok((200, body)) => serde_json::from_str(&body).unwrap_or(Value::Null),
        Ok((status, body)) if status >= 500 => {
            return HandlerOutcome::retryable("PROVIDER_UNAVAILABLE", format!("{status}: {body}"));
        }
        Ok((status, body)) => {
            return HandlerOutcome::terminal("CARD_DECLINED", format!("{status}: {body}"));
        }
        Err(e) => return HandlerOutcome::retryable("PROVIDER_UNREACHABLE", e.to_string()),
    };
    // The payment confirmation, deduplicated on the charge: a retry reports it once.
    let event = NewEvent {
        event_type: "payment-confirmed".into(),
        source: Some("payments".into()),
        external_id: Some(attempt.idempotency_key.clone()),
        payload: json!({ "orderId": order, "charge": charge }),
    };
    match blocking(move || store.ingest(&event)).await {
        Ok(_) => HandlerOutcome::Succeeded(Some(charge)),
        Err(e) => HandlerOutcome::retryable("EVENT_NOT_RECORDED", e.to_string()),
    }
}

/// The workflow's first action: a stand-in for a call to the warehouse.
async fn reserve_stock(attempt: Attempt) -> HandlerOutcome {
    tokio::time::sleep(Duration::from_millis(50)).await;
    let order = attempt.payload["orderId"].as_str().unwrap_or_default();
    HandlerOutcome::Succeeded(Some(json!({ "reservation": format!("res-{order}") })))
}

/// Runs a store call (they block) off the async workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| leasehold::Error::OutcomeUnknown(e.to_string()))?
}

/// One HTTP/1.1 POST; answers the status and the body.
async fn post(address: &str, path: &str, key: &str, body: &str) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(address).await?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nIdempotency-Key: {key}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    Ok((status, body))
}

/// The pretend payment provider: one charge per idempotency key.
struct PaymentProvider {
    address: String,
    charges: Arc<Mutex<HashMap<String, String>>>,
    calls: Arc<Mutex<u64>>,
}

impl PaymentProvider {
    async fn start() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| leasehold::Error::Invalid(format!("cannot listen: {e}")))?;
        let address = listener
            .local_addr()
            .map_err(|e| leasehold::Error::Invalid(e.to_string()))?
            .to_string();
        let charges = Arc::new(Mutex::new(HashMap::new()));
        let calls = Arc::new(Mutex::new(0));
        let (c, n) = (charges.clone(), calls.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (c, n) = (c.clone(), n.clone());
                tokio::spawn(async move {
                    let _ = serve_one(stream, &c, &n).await;
                });
            }
        });
        Ok(Self {
            address,
            charges,
            calls,
        })
    }

    fn charges(&self) -> usize {
        self.charges.lock().map_or(0, |c| c.len())
    }

    fn calls(&self) -> u64 {
        self.calls.lock().map_or(0, |n| *n)
    }
}

async fn serve_one(
    stream: TcpStream,
    charges: &Mutex<HashMap<String, String>>,
    calls: &Mutex<u64>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let (mut key, mut length) = (String::new(), 0usize);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            match name.to_ascii_lowercase().as_str() {
                "idempotency-key" => key = value.trim().to_owned(),
                "content-length" => length = value.trim().parse().unwrap_or(0),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    let (charge, replayed) = {
        let mut charges = charges.lock().map_err(|_| std::io::ErrorKind::Other)?;
        *calls.lock().map_err(|_| std::io::ErrorKind::Other)? += 1;
        let fresh = format!("ch_{}", charges.len() + 1);
        let replayed = charges.contains_key(&key);
        (charges.entry(key).or_insert(fresh).clone(), replayed)
    };
    let answer = json!({ "chargeId": charge, "replayed": replayed }).to_string();
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
    reader.into_inner().write_all(response.as_bytes()).await
}
