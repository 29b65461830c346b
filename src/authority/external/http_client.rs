//! The HTTP/1.1 client `http` handlers use: hyper's pooled client, one POST per attempt
//! over a kept-alive connection to the handler's endpoint, the response body read up to
//! [`MAX_BODY_BYTES`]. The pool keeps every connection that goes idle (until hyper's idle
//! timeout): an authority never has more requests in flight to one handler than its slots
//! allow, so the pool holds at most that many, and a handler run at high concurrency does
//! not open a new connection for most of its attempts. Timeouts and cancellation
//! belong to the caller: dropping a request's future closes its connection.

use std::error::Error as StdError;
use std::io::ErrorKind;

use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::Request;
use hyper::body::{Body, Bytes, Incoming};
use hyper::ext::ReasonPhrase;
use hyper::header::HeaderMap;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use super::endpoint::Endpoint;

/// The largest response body read; a longer one is an error.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// The most a response head (status line and headers) may take.
const MAX_HEAD_BYTES: usize = 64 * 1024;

type Pool = hyper_util::client::legacy::Client<HttpConnector, Full<Bytes>>;
type PoolError = hyper_util::client::legacy::Error;

/// One response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// The reason phrase the server sent (hyper keeps it aside only when it is not the
    /// status's usual one).
    pub reason: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Response {
    /// The header named `name`, when its value is text.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Why a request got no response; each says why in one line.
#[derive(Debug)]
pub enum HttpError {
    /// Nobody listens there.
    Refused(String),
    /// Nothing was sent: the connection could not be made otherwise, or the request not
    /// built.
    Connect(String),
    /// The connection broke, or the server answered something that is not HTTP, after
    /// the request was (at least partly) sent: the server may have acted on it.
    Lost(String),
}

/// Connections to one endpoint.
#[derive(Debug)]
pub struct Client {
    endpoint: Endpoint,
    pool: Pool,
}

impl Client {
    #[must_use]
    pub fn new(endpoint: Endpoint) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let pool = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .http1_max_buf_size(MAX_HEAD_BYTES)
            .build(connector);
        Self { endpoint, pool }
    }

    #[must_use]
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// POSTs `body` with `headers` (beside `Host` and `Content-Length`). If the connection
    /// closes before the response comes — a kept-alive one the server had just closed,
    /// typically — the request goes once more: it carries an idempotency key, so a
    /// duplicate is safe by contract.
    ///
    /// # Errors
    /// [`HttpError`].
    pub async fn post(&self, headers: &[(&str, &str)], body: Bytes) -> Result<Response, HttpError> {
        let first = self
            .pool
            .request(self.request(headers, body.clone())?)
            .await;
        let response = match first {
            Err(e) if closed_before_answer(&e) => {
                self.pool.request(self.request(headers, body)?).await
            }
            sent => sent,
        }
        .map_err(|e| classify(&e))?;
        read(response).await
    }

    fn request(
        &self,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>, HttpError> {
        let mut request = Request::post(self.endpoint.uri().clone());
        for (name, value) in headers {
            request = request.header(*name, header_value(value));
        }
        request
            .body(Full::new(body))
            .map_err(|e| HttpError::Connect(format!("building the request: {e}")))
    }
}

/// The whole response, its body up to [`MAX_BODY_BYTES`].
async fn read(response: hyper::Response<Incoming>) -> Result<Response, HttpError> {
    let (head, body) = response.into_parts();
    let too_long = || HttpError::Lost(format!("response body exceeds {MAX_BODY_BYTES} bytes"));
    if body.size_hint().lower() > MAX_BODY_BYTES as u64 {
        return Err(too_long());
    }
    let body = Limited::new(body, MAX_BODY_BYTES)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<LengthLimitError>() {
                too_long()
            } else {
                HttpError::Lost(format!("reading the body: {}", one_line(&*e)))
            }
        })?
        .to_bytes();
    let reason = match head.extensions.get::<ReasonPhrase>() {
        Some(sent) => String::from_utf8_lossy(sent.as_bytes()).into_owned(),
        None => head
            .status
            .canonical_reason()
            .unwrap_or_default()
            .to_owned(),
    };
    Ok(Response {
        status: head.status.as_u16(),
        reason,
        headers: head.headers,
        body,
    })
}

/// `value` as a header value: visible ASCII and spaces kept, every other byte (and `%`)
/// percent-encoded, so no value can break the header block.
fn header_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if (b.is_ascii_graphic() || b == b' ') && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Nobody listening, no connection otherwise, or a request that went out and got no
/// response.
fn classify(e: &PoolError) -> HttpError {
    let why = describe(e);
    if !e.is_connect() {
        HttpError::Lost(why)
    } else if io_kinds(e).any(|kind| kind == ErrorKind::ConnectionRefused) {
        HttpError::Refused(why)
    } else {
        HttpError::Connect(why)
    }
}

/// Whether the connection closed (or was reset) after the request went and before a
/// response head came back.
fn closed_before_answer(e: &PoolError) -> bool {
    !e.is_connect()
        && (chain(e).any(|s| {
            s.downcast_ref::<hyper::Error>()
                .is_some_and(hyper::Error::is_incomplete_message)
        }) || io_kinds(e)
            .any(|kind| matches!(kind, ErrorKind::ConnectionReset | ErrorKind::BrokenPipe)))
}

/// `e` and its causes.
fn chain<'a>(
    e: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(e), |&e| e.source())
}

fn io_kinds(e: &PoolError) -> impl Iterator<Item = ErrorKind> + '_ {
    chain(e).filter_map(|s| s.downcast_ref::<std::io::Error>().map(std::io::Error::kind))
}

/// `e`'s causes in one line: the pool's own error only names a category.
fn describe(e: &PoolError) -> String {
    match e.source() {
        Some(cause) => one_line(cause),
        None => e.to_string(),
    }
}

/// An error and its causes in one line.
fn one_line(e: &(dyn StdError + 'static)) -> String {
    let causes: Vec<String> = chain(e).map(ToString::to_string).collect();
    causes.join(": ").replace(['\r', '\n'], " ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// A server that reads one request from each connection and answers it with
    /// `script(connection number, request number on it)` — raw bytes, or `None` to
    /// close the connection without a word — until it answers `last`. Reports how many
    /// connections and requests it saw.
    async fn scripted(
        script: impl Fn(usize, usize) -> Option<Vec<u8>> + Send + 'static,
        answers: usize,
    ) -> (Client, tokio::task::JoinHandle<(usize, usize)>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut connections, mut requests, mut answered) = (0, 0, 0);
            while answered < answers {
                let (stream, _) = listener.accept().await.unwrap();
                connections += 1;
                let mut reader = BufReader::new(stream);
                for on_it in 0.. {
                    if !read_request(&mut reader).await {
                        break;
                    }
                    requests += 1;
                    let Some(raw) = script(connections, on_it) else {
                        break;
                    };
                    reader.get_mut().write_all(&raw).await.unwrap();
                    answered += 1;
                    if answered == answers {
                        break;
                    }
                }
            }
            (connections, requests)
        });
        let url = format!("http://127.0.0.1:{port}/x");
        (Client::new(Endpoint::parse(&url, false).unwrap()), server)
    }

    /// Reads one request's head and body; false at the end of the connection.
    async fn read_request(reader: &mut BufReader<TcpStream>) -> bool {
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                return false;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await.is_ok()
    }

    async fn post_to(raw: &str) -> Result<Response, HttpError> {
        let raw = raw.as_bytes().to_vec();
        let (client, _server) = scripted(move |_, _| Some(raw.clone()), 1).await;
        client.post(&[], Bytes::from_static(b"{}")).await
    }

    #[tokio::test]
    async fn responses_framed_every_way() {
        let r = post_to("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"ok\":null}")
            .await
            .expect("length");
        assert_eq!((r.status, &r.body[..]), (200, &b"{\"ok\":null}"[..]));
        let r = post_to(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\nRetry-After: 2\r\n\r\n4\r\nbusy\r\n3;x=y\r\n...\r\n0\r\nTrailer: t\r\n\r\n",
        )
        .await
        .expect("chunked");
        assert_eq!(
            (r.status, r.reason.as_str(), &r.body[..]),
            (503, "Busy", &b"busy..."[..])
        );
        assert_eq!(r.header("retry-after"), Some("2"));
        let r = post_to("HTTP/1.0 200 OK\r\n\r\nuntil the end")
            .await
            .expect("eof");
        assert_eq!(&r.body[..], b"until the end");
        let r = post_to("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            .await
            .expect("the usual reason");
        assert_eq!(r.reason, "Not Found");
    }

    #[tokio::test]
    async fn broken_and_oversized_responses_are_lost_in_one_line() {
        for bad in [
            "SMTP ready\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ] {
            match post_to(bad).await {
                Err(HttpError::Lost(why)) => {
                    assert!(!why.is_empty() && !why.contains('\n'), "{bad}: {why}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        let huge = format!("HTTP/1.1 200 OK\r\n\r\n{}", "x".repeat(MAX_BODY_BYTES + 1));
        for bad in ["HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n", &huge] {
            match post_to(bad).await {
                Err(HttpError::Lost(why)) => {
                    assert_eq!(why, "response body exceeds 1048576 bytes");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    /// Attempts reuse the connection; when the server closes it as the next request
    /// arrives, that request goes again, once, on a new one.
    #[tokio::test]
    async fn a_connection_the_server_closed_is_replaced() {
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec();
        let (client, server) = scripted(
            move |connection, on_it| (connection > 1 || on_it < 2).then(|| ok.clone()),
            3,
        )
        .await;
        for _ in 0..3 {
            let r = client
                .post(&[], Bytes::from_static(b"{}"))
                .await
                .expect("answered");
            assert_eq!(&r.body[..], b"ok");
        }
        assert_eq!(
            server.await.unwrap(),
            (2, 4),
            "two connections, one request twice"
        );
    }

    #[tokio::test]
    async fn nobody_listening_is_refused() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let endpoint = Endpoint::parse(&format!("http://127.0.0.1:{port}/"), false).unwrap();
        let refused = Client::new(endpoint).post(&[], Bytes::new()).await;
        assert!(matches!(refused, Err(HttpError::Refused(_))), "{refused:?}");
    }

    #[test]
    fn header_values_cannot_break_the_header_block() {
        assert_eq!(header_value("order-7/a b"), "order-7/a b");
        assert_eq!(header_value("x\r\ny%é"), "x%0D%0Ay%25%C3%A9");
    }
}
