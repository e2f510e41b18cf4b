//! A minimal HTTP/1.1 client for the HTTP API: one request per connection (`Connection: close`).
//! Hand-written on purpose: the tests check the exact bytes and headers the server sends
//! (Content-Length, HEAD), and send what no well-behaved client would.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A response: status, headers (names lower-cased) and body.
pub struct HttpResponse {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: String,
}

/// One request with a hand-written HTTP/1.1 client (the server closes after each response).
pub fn http(address: SocketAddr, method: &str, path: &str) -> HttpResponse {
    http_with(address, method, path, "")
}

/// An HTTP request with extra header lines (each ending in \r\n).
pub fn http_with(address: SocketAddr, method: &str, path: &str, headers: &str) -> HttpResponse {
    http_body(address, method, path, headers, b"")
}

/// An HTTP request with extra header lines and a body (its Content-Length is added when the
/// body is not empty).
pub fn http_body(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
    body: &[u8],
) -> HttpResponse {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(5))
        .unwrap_or_else(|error| panic!("connect to the HTTP endpoint {address}: {error}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let length = if body.is_empty() {
        String::new()
    } else {
        format!("Content-Length: {}\r\n", body.len())
    };
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAccept: */*\r\nConnection: close\r\n{length}{headers}\r\n"
    )
    .unwrap();
    stream.write_all(body).unwrap();
    read_response(&mut stream, method, path)
}

/// Reads a whole response from a connection the server closes after it.
pub fn read_response(stream: &mut impl Read, method: &str, path: &str) -> HttpResponse {
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read HTTP response");
    let text = String::from_utf8(raw).expect("UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("response head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("status line {status_line:?}"));
    let headers: HashMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    if method != "HEAD" {
        let length: usize = headers
            .get("content-length")
            .map_or(0, |length| length.parse().unwrap());
        assert_eq!(length, body.len(), "Content-Length of {path}");
    }
    HttpResponse {
        status,
        headers,
        body: body.to_string(),
    }
}

/// The sum of every sample of counter or gauge `family` in the `/metrics` page at `address`.
pub fn metric_sum(address: SocketAddr, family: &str) -> f64 {
    let response = http(address, "GET", "/metrics");
    assert_eq!(response.status, 200, "GET /metrics");
    response
        .body
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            let name = name.split('{').next()?;
            (name == family).then(|| value.parse::<f64>().ok())?
        })
        .sum()
}
