//! The opening handshake (RFC 6455 4.2), without I/O: the client's HTTP/1.1 upgrade request in,
//! the server's answer out.

use base64::Engine;

/// The largest request head accepted; a browser's is well under 2 KiB.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;

/// RFC 6455 1.3.
const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Why an upgrade request is refused: the status line's code and a short text for the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub reason: &'static str,
}

const fn refuse(status: u16, reason: &'static str) -> Refusal {
    Refusal { status, reason }
}

/// Where the request head ends (the index after its blank line), if it has arrived.
pub fn head_end(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map(|at| at + 4)
}

/// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key`.
pub fn accept_key(key: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{key}{ACCEPT_GUID}").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// Whether a comma-separated header value holds `token` (case-insensitive).
fn has_token(value: &str, token: &str) -> bool {
    value
        .split(',')
        .any(|item| item.trim().eq_ignore_ascii_case(token))
}

/// Checks an upgrade request head (through its blank line) and returns the
/// `Sec-WebSocket-Accept` value to answer with.
pub fn check_request(head: &[u8]) -> Result<String, Refusal> {
    let head =
        std::str::from_utf8(head).map_err(|_| refuse(400, "the request head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    if method != Some("GET") {
        return Err(refuse(
            405,
            "a WebSocket connection opens with GET and Upgrade: websocket",
        ));
    }
    if target.is_none_or(str::is_empty) || version != Some("HTTP/1.1") || parts.next().is_some() {
        return Err(refuse(400, "a malformed request line"));
    }
    let (mut upgrade, mut connection, mut key, mut ws_version) = (false, false, None, None);
    for line in lines.take_while(|line| !line.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Err(refuse(400, "a malformed header line"));
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "upgrade" => upgrade |= has_token(value, "websocket"),
            "connection" => connection |= has_token(value, "upgrade"),
            "sec-websocket-key" => key = Some(value),
            "sec-websocket-version" => ws_version = Some(value),
            _ => {}
        }
    }
    if !upgrade || !connection {
        return Err(refuse(
            400,
            "not a WebSocket upgrade (Upgrade: websocket, Connection: Upgrade)",
        ));
    }
    if ws_version != Some("13") {
        return Err(refuse(426, "Sec-WebSocket-Version must be 13"));
    }
    let key = key.ok_or(refuse(400, "Sec-WebSocket-Key is missing"))?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(key)
        .map_err(|_| refuse(400, "Sec-WebSocket-Key is not base64"))?;
    if decoded.len() != 16 {
        return Err(refuse(400, "Sec-WebSocket-Key must encode 16 bytes"));
    }
    Ok(accept_key(key))
}

/// The 101 answer.
pub fn switching_protocols(accept: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {accept}\r\n\r\n"
    )
    .into_bytes()
}

/// The answer to a refused request; the connection closes after it.
pub fn refusal_response(refusal: Refusal) -> Vec<u8> {
    let status = match refusal.status {
        405 => "Method Not Allowed",
        426 => "Upgrade Required",
        431 => "Request Header Fields Too Large",
        _ => "Bad Request",
    };
    let extra = if refusal.status == 426 {
        "Sec-WebSocket-Version: 13\r\n"
    } else {
        ""
    };
    let body = format!("{}\n", refusal.reason);
    format!(
        "HTTP/1.1 {} {status}\r\n{extra}Content-Type: text/plain\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        refusal.status,
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_example_key() {
        // RFC 6455 1.3.
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn upgrade_requests() {
        let good = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n\
                    Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
        assert_eq!(head_end(good.as_bytes()), Some(good.len()));
        assert_eq!(
            check_request(good.as_bytes()).unwrap(),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        let status = |text: &str| check_request(text.as_bytes()).unwrap_err().status;
        assert_eq!(status(&good.replace("GET", "POST")), 405);
        assert_eq!(status(&good.replace("Upgrade: websocket\r\n", "")), 400);
        assert_eq!(status(&good.replace("Version: 13", "Version: 8")), 426);
        assert_eq!(
            status(&good.replace("dGhlIHNhbXBsZSBub25jZQ==", "short")),
            400
        );
        assert_eq!(status("GET / HTTP/1.0\r\n\r\n"), 400);
        assert!(
            String::from_utf8(refusal_response(refuse(426, "x")))
                .unwrap()
                .contains("Sec-WebSocket-Version: 13")
        );
    }
}
