//! The small HTTP/1.1 client `http` handlers use: one POST per attempt over a kept-alive
//! connection to its endpoint (a few idle ones pooled per handler), reading responses
//! framed by `Content-Length`, chunked, or the end of the connection. Timeouts and
//! cancellation belong to the caller: dropping a request's future drops its connection.

use std::sync::Mutex;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::endpoint::Endpoint;

/// The largest response body read; a longer one is an error.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// The largest status line or header line, and all headers together.
const MAX_LINE_BYTES: usize = 8 * 1024;
const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Idle connections kept per endpoint.
const MAX_IDLE: usize = 8;

/// One response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub reason: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (lower-case).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request got no response.
#[derive(Debug)]
pub enum HttpError {
    /// Nobody listens there.
    Refused(std::io::Error),
    /// The connection could not be made otherwise.
    Connect(std::io::Error),
    /// The connection broke, or the server answered something that is not HTTP, after
    /// the request was (at least partly) sent: the server may have acted on it.
    Lost(String),
}

/// Connections to one endpoint.
#[derive(Debug)]
pub struct Client {
    endpoint: Endpoint,
    idle: Mutex<Vec<TcpStream>>,
}

/// How one exchange on one connection ended.
enum Exchange {
    Done(Response, Option<TcpStream>),
    /// It failed before a single response byte came back.
    Silent(String),
    Broken(String),
}

impl Client {
    #[must_use]
    pub fn new(endpoint: Endpoint) -> Self {
        Self {
            endpoint,
            idle: Mutex::new(Vec::new()),
        }
    }

    #[must_use]
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// POSTs `body` with `headers` (beside `Host`, `Content-Length` and `Connection`). An
    /// idle connection is reused; if it turns out the server had closed it (no response
    /// byte at all), the request goes once more on a fresh one — it carries an idempotency
    /// key, so a duplicate is safe by contract.
    ///
    /// # Errors
    /// [`HttpError`].
    pub async fn post(&self, headers: &[(&str, &str)], body: &[u8]) -> Result<Response, HttpError> {
        let request = self.request(headers, body);
        let reused = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        if let Some(stream) = reused {
            match exchange(stream, &request).await {
                Exchange::Done(response, back) => return Ok(self.keep(response, back)),
                Exchange::Silent(_) => {}
                Exchange::Broken(why) => return Err(HttpError::Lost(why)),
            }
        }
        let stream = TcpStream::connect((self.endpoint.connect_host(), self.endpoint.port))
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::ConnectionRefused => HttpError::Refused(e),
                _ => HttpError::Connect(e),
            })?;
        let _ = stream.set_nodelay(true);
        match exchange(stream, &request).await {
            Exchange::Done(response, back) => Ok(self.keep(response, back)),
            Exchange::Silent(why) | Exchange::Broken(why) => Err(HttpError::Lost(why)),
        }
    }

    fn keep(&self, response: Response, back: Option<TcpStream>) -> Response {
        if let (Some(stream), Ok(mut idle)) = (back, self.idle.lock())
            && idle.len() < MAX_IDLE
        {
            idle.push(stream);
        }
        response
    }

    fn request(&self, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: keep-alive\r\n",
            self.endpoint.path,
            self.endpoint.authority(),
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {}\r\n", header_value(value)));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        bytes
    }
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

async fn exchange(mut stream: TcpStream, request: &[u8]) -> Exchange {
    if let Err(e) = stream.write_all(request).await {
        return Exchange::Silent(format!("sending the request: {e}"));
    }
    let mut reader = BufReader::new(stream);
    match read_response(&mut reader).await {
        Ok((response, reusable)) => {
            // Bytes after the response are not ours to read: do not reuse that connection.
            let back = (reusable && reader.buffer().is_empty()).then(|| reader.into_inner());
            Exchange::Done(response, back)
        }
        Err((0, why)) => Exchange::Silent(why),
        Err((_, why)) => Exchange::Broken(why),
    }
}

/// Reads one response; `Err((bytes read, why))`. Also says whether the connection may
/// carry another request.
async fn read_response<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> Result<(Response, bool), (usize, String)> {
    let mut read = 0usize;
    let (version, status, reason, headers) = loop {
        let line = read_line(reader, &mut read).await?;
        let mut parts = line.splitn(3, ' ');
        let version = parts.next().unwrap_or_default().to_owned();
        let status = parts
            .next()
            .and_then(|s| s.parse::<u16>().ok())
            .filter(|s| (100..600).contains(s) && version.starts_with("HTTP/1."))
            .ok_or_else(|| (read, format!("not an HTTP response: {:?}", wire_cut(&line))))?;
        let reason = parts.next().unwrap_or_default().trim().to_owned();
        let mut headers = Vec::new();
        let mut header_bytes = 0usize;
        loop {
            let line = read_line(reader, &mut read).await?;
            if line.is_empty() {
                break;
            }
            header_bytes += line.len();
            if header_bytes > MAX_HEADER_BYTES {
                return Err((
                    read,
                    format!("response headers exceed {MAX_HEADER_BYTES} bytes"),
                ));
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| (read, format!("bad header line {:?}", wire_cut(&line))))?;
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        // Interim answers (100 Continue) come before the real one.
        if status >= 200 {
            break (version, status, reason, headers);
        }
    };
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    let close = find("connection").is_some_and(|c| c.contains("close")) || version == "HTTP/1.0";
    let chunked = find("transfer-encoding").is_some_and(|t| t.contains("chunked"));
    let length = find("content-length");
    let (body, framed) = if status == 204 || status == 304 {
        (Vec::new(), true)
    } else if chunked {
        (read_chunked(reader, &mut read).await?, true)
    } else if let Some(length) = length {
        let n: usize = length
            .parse()
            .map_err(|_| (read, format!("bad Content-Length {length:?}")))?;
        if n > MAX_BODY_BYTES {
            return Err((
                read,
                format!("response body of {n} bytes exceeds {MAX_BODY_BYTES}"),
            ));
        }
        let mut body = vec![0; n];
        reader
            .read_exact(&mut body)
            .await
            .map_err(|e| (read, format!("reading the body: {e}")))?;
        (body, true)
    } else {
        let mut body = Vec::new();
        let got = reader
            .take(MAX_BODY_BYTES as u64 + 1)
            .read_to_end(&mut body)
            .await
            .map_err(|e| (read, format!("reading the body: {e}")))?;
        if got > MAX_BODY_BYTES {
            return Err((
                read,
                format!("response body exceeds {MAX_BODY_BYTES} bytes"),
            ));
        }
        (body, false)
    };
    Ok((
        Response {
            status,
            reason,
            headers,
            body,
        },
        framed && !close,
    ))
}

async fn read_chunked<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    read: &mut usize,
) -> Result<Vec<u8>, (usize, String)> {
    let mut body = Vec::new();
    loop {
        let line = read_line(reader, read).await?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| (*read, format!("bad chunk size {:?}", wire_cut(&line))))?;
        if size == 0 {
            // Trailers, up to the blank line.
            while !read_line(reader, read).await?.is_empty() {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err((
                *read,
                format!("response body exceeds {MAX_BODY_BYTES} bytes"),
            ));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader
            .read_exact(&mut body[start..])
            .await
            .map_err(|e| (*read, format!("reading a chunk: {e}")))?;
        *read += size;
        if !read_line(reader, read).await?.is_empty() {
            return Err((*read, "a chunk is longer than its size".to_owned()));
        }
    }
}

/// One CRLF- (or LF-) terminated line, at most [`MAX_LINE_BYTES`]; an end of stream
/// before it is an error.
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    read: &mut usize,
) -> Result<String, (usize, String)> {
    let mut line = Vec::new();
    loop {
        let buf = reader
            .fill_buf()
            .await
            .map_err(|e| (*read, format!("reading the response: {e}")))?;
        if buf.is_empty() {
            return Err((*read, "the connection closed mid-response".to_owned()));
        }
        let end = buf.iter().position(|&b| b == b'\n');
        let chunk = &buf[..end.map_or(buf.len(), |i| i + 1)];
        line.extend_from_slice(chunk);
        let used = chunk.len();
        reader.consume(used);
        *read += used;
        if line.len() > MAX_LINE_BYTES {
            return Err((
                *read,
                format!("a response line exceeds {MAX_LINE_BYTES} bytes"),
            ));
        }
        if end.is_some() {
            break;
        }
    }
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.pop();
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

fn wire_cut(line: &str) -> String {
    line.chars().take(80).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    async fn parse(raw: &str) -> Result<(Response, bool), (usize, String)> {
        let mut reader = BufReader::new(raw.as_bytes());
        read_response(&mut reader).await
    }

    #[tokio::test]
    async fn responses_framed_every_way() {
        let (r, reuse) = parse("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"ok\":null}")
            .await
            .expect("length");
        assert_eq!(
            (r.status, r.body.as_slice(), reuse),
            (200, &b"{\"ok\":null}"[..], true)
        );
        let (r, reuse) = parse(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\nRetry-After: 2\r\n\r\n4\r\nbusy\r\n3;x=y\r\n...\r\n0\r\nTrailer: t\r\n\r\n",
        )
        .await
        .expect("chunked");
        assert_eq!(
            (r.status, r.reason.as_str(), r.body.as_slice(), reuse),
            (503, "Busy", &b"busy..."[..], true)
        );
        assert_eq!(r.header("retry-after"), Some("2"));
        let (r, reuse) = parse("HTTP/1.0 200 OK\r\n\r\nuntil the end")
            .await
            .expect("eof");
        assert_eq!((r.body.as_slice(), reuse), (&b"until the end"[..], false));
        let (_, reuse) = parse("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
            .await
            .expect("204");
        assert!(!reuse);
    }

    #[tokio::test]
    async fn broken_responses_say_how_far_they_got() {
        assert_eq!(parse("").await.expect_err("silent").0, 0);
        for bad in [
            "SMTP ready\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n",
        ] {
            let (read, why) = parse(bad).await.expect_err(bad);
            assert!(read > 0 && !why.contains('\n'), "{bad}: {why}");
        }
    }

    /// Answers one request per connection with `200 ok`, then closes it; counts accepts.
    async fn one_shot_server() -> (Endpoint, tokio::task::JoinHandle<usize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            for accepted in 1.. {
                let (stream, _) = listener.accept().await.unwrap();
                let mut reader = BufReader::new(stream);
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).await.unwrap();
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).await.unwrap();
                let mut stream = reader.into_inner();
                stream
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    .await
                    .unwrap();
                if body == b"last" {
                    return accepted;
                }
            }
            unreachable!()
        });
        let endpoint = Endpoint::parse(&format!("http://127.0.0.1:{port}/x"), false).unwrap();
        (endpoint, server)
    }

    /// The server closed the kept-alive connection: the request goes again, once, on a
    /// new one.
    #[tokio::test]
    async fn a_connection_the_server_closed_is_replaced() {
        let (endpoint, server) = one_shot_server().await;
        let client = Client::new(endpoint);
        let first = client.post(&[], b"first").await.expect("first");
        assert_eq!(client.idle.lock().unwrap().len(), 1, "kept alive");
        let last = client.post(&[], b"last").await.expect("resent");
        assert_eq!(
            (first.body.as_slice(), last.body.as_slice()),
            (&b"ok"[..], &b"ok"[..])
        );
        assert_eq!(server.await.unwrap(), 2, "a second connection");
    }

    #[tokio::test]
    async fn nobody_listening_is_refused() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let endpoint = Endpoint::parse(&format!("http://127.0.0.1:{port}/"), false).unwrap();
        let refused = Client::new(endpoint).post(&[], b"{}").await;
        assert!(matches!(refused, Err(HttpError::Refused(_))), "{refused:?}");
    }

    #[test]
    fn header_values_cannot_break_the_header_block() {
        assert_eq!(header_value("order-7/a b"), "order-7/a b");
        assert_eq!(header_value("x\r\ny%é"), "x%0D%0Ay%25%C3%A9");
    }
}
