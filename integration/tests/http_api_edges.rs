//! The HTTP API at its edges, with a hand-written client: CORS, limits (body size, body
//! deadline, connections), malformed input, tokens (forged, expired, refreshed, logged out
//! across a restart), HTTPS with the generated certificate.

use rill_integration::http::{HttpResponse, http, http_body, http_with, read_response};
use rill_integration::{ServerOptions, TestServer};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const JSON: &str = "Content-Type: application/json\r\n";

fn address(server: &TestServer) -> SocketAddr {
    server.http_address().expect("HTTP API listening")
}

fn login(address: SocketAddr) -> String {
    let response = http_body(
        address,
        "POST",
        "/users/login",
        JSON,
        br#"{"username":"iggy","password":"iggy"}"#,
    );
    assert_eq!(response.status, 200, "{}", response.body);
    let identity: serde_json::Value = serde_json::from_str(&response.body).unwrap();
    assert_eq!(identity["user_id"], 0);
    identity["access_token"]["token"]
        .as_str()
        .expect("a token")
        .to_owned()
}

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}\r\n")
}

/// A `POST /streams` with the token and JSON type, then `rest` as written (the rest of the head
/// and the body): for requests no client sends, a lying length or a body that stops. Read until
/// the server closes.
fn raw_post(address: SocketAddr, token: &str, rest: &str) -> HttpResponse {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "POST /streams HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{}{JSON}{rest}",
        bearer(token)
    )
    .unwrap();
    read_response(&mut stream, "POST", "/streams")
}

fn error_id(response: &HttpResponse) -> u64 {
    let body: serde_json::Value = serde_json::from_str(&response.body)
        .unwrap_or_else(|error| panic!("error body {:?}: {error}", response.body));
    body["id"].as_u64().expect("numeric id")
}

#[test]
fn malformed_requests_get_clear_errors_and_cors_is_answered() {
    let server = TestServer::start(ServerOptions::new());
    let address = address(&server);
    let token = login(address);
    let auth = bearer(&token);

    // No token, a forged one, one with a flipped signature byte: 401, nothing run.
    assert_eq!(http(address, "GET", "/streams").status, 401);
    assert_eq!(
        http_with(address, "GET", "/streams", &bearer("a.b.c")).status,
        401
    );
    let mut forged = token.clone().into_bytes();
    let last = forged.len() - 2;
    forged[last] = if forged[last] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();
    assert_eq!(
        http_with(address, "GET", "/streams", &bearer(&forged)).status,
        401
    );
    assert_eq!(http_with(address, "GET", "/streams", &auth).status, 200);
    let head = http_with(address, "HEAD", "/streams", &auth);
    assert_eq!((head.status, head.body.as_str()), (200, ""));

    // Unknown routes 404, known routes with another method 405.
    assert_eq!(http_with(address, "GET", "/nowhere", &auth).status, 404);
    assert_eq!(http(address, "POST", "/ping").status, 405);
    assert_eq!(http_with(address, "PATCH", "/streams", &auth).status, 405);

    // Bodies that are not what the route takes: 400 with upstream's error body.
    let headers = format!("{auth}{JSON}");
    let not_json = http_body(address, "POST", "/streams", &headers, b"{nope");
    assert_eq!((not_json.status, error_id(&not_json)), (400, 4));
    let text = http_body(
        address,
        "POST",
        "/streams",
        &format!("{auth}Content-Type: text/plain\r\n"),
        br#"{"name":"x"}"#,
    );
    assert_eq!((text.status, error_id(&text)), (415, 4));
    let wrong_type = http_body(address, "POST", "/streams", &headers, br#"{"name":7}"#);
    assert_eq!(wrong_type.status, 400);
    let long_name = format!(r#"{{"name":"{}"}}"#, "x".repeat(300));
    let long_name = http_body(address, "POST", "/streams", &headers, long_name.as_bytes());
    assert_eq!((long_name.status, error_id(&long_name)), (400, 1013));
    let created = http_body(address, "POST", "/streams", &headers, br#"{"name":"s"}"#);
    assert_eq!(created.status, 200, "{}", created.body);
    let again = http_body(address, "POST", "/streams", &headers, br#"{"name":"s"}"#);
    assert_eq!((again.status, error_id(&again)), (400, 1012));
    let missing = http_with(address, "DELETE", "/streams/77", &auth);
    assert_eq!((missing.status, error_id(&missing)), (404, 1009));
    let poll = http_with(
        address,
        "GET",
        "/streams/s/topics/none/messages?kind=sideways",
        &auth,
    );
    assert_eq!((poll.status, error_id(&poll)), (400, 4));

    // CORS: preflight without a token, and the headers on an answer.
    let preflight = http_with(
        address,
        "OPTIONS",
        "/streams",
        "Origin: https://ui.example\r\nAccess-Control-Request-Method: POST\r\n",
    );
    assert_eq!(preflight.status, 200);
    assert_eq!(preflight.headers["access-control-allow-origin"], "*");
    assert!(preflight.headers["access-control-allow-methods"].contains("POST"));
    assert!(preflight.headers["access-control-allow-headers"].contains("authorization"));
    let answered = http_with(address, "GET", "/ping", "Origin: https://ui.example\r\n");
    assert_eq!(answered.headers["access-control-allow-origin"], "*");
}

#[test]
fn bodies_are_bounded_in_size_and_time_and_connections_in_number() {
    let server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_HTTP_MAX_REQUEST_SIZE", "1 KB")
            .env("IGGY_HTTP_REQUEST_BODY_TIMEOUT", "1 s")
            .env("IGGY_HTTP_MAX_CONNECTIONS", "3"),
    );
    let address = address(&server);
    let token = login(address);

    // A declared body over the limit is refused before it is sent.
    let refused = raw_post(address, &token, "Content-Length: 5000000\r\n\r\n");
    assert_eq!(refused.status, 413);
    // A chunked body that grows past the limit is cut off too.
    let chunk = "x".repeat(1500);
    let rest = format!(
        "Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
        chunk.len()
    );
    assert_eq!(raw_post(address, &token, &rest).status, 413);

    // A body that stops arriving is answered 408 after the deadline.
    let started = Instant::now();
    let late = raw_post(address, &token, "Content-Length: 100\r\n\r\n{\"na");
    assert_eq!(late.status, 408);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // Connections over the cap get 503; the others are still served.
    let held: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect(address).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut extra = TcpStream::connect(address).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut busy = String::new();
    let _ = extra.read_to_string(&mut busy);
    assert!(busy.starts_with("HTTP/1.1 503"), "{busy:?}");
    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(http(address, "GET", "/ping").status, 200);
}

#[test]
fn large_bodies_share_the_in_flight_budget_of_binary_clients() {
    let server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_HTTP_MAX_REQUEST_SIZE", "1 MB")
            .env("IGGY_TCP_MAX_SEND_MESSAGES_SIZE", "1 MB")
            .env("IGGY_LIMITS_MAX_REQUEST_BYTES_IN_FLIGHT", "1 MiB"),
    );
    let address = address(&server);
    let token = login(address);
    // A 900 KB body on its way holds 900 KB of the budget...
    let mut slow = TcpStream::connect(address).unwrap();
    write!(
        slow,
        "POST /streams HTTP/1.1\r\nHost: x\r\n{}{JSON}Content-Length: 900000\r\n\r\n{{",
        bearer(&token)
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // ...so another 500 KB body does not fit: 503, before it is read.
    let refused = raw_post(address, &token, "Content-Length: 500000\r\n\r\n");
    assert_eq!(refused.status, 503, "{}", refused.body);
    // Once the first connection is gone, its share is back.
    drop(slow);
    std::thread::sleep(Duration::from_millis(300));
    let body = format!(r#"{{"name":"{}"}}"#, "n".repeat(200));
    let padded = format!("{body}{}", " ".repeat(500_000));
    let accepted = http_body(
        address,
        "POST",
        "/streams",
        &format!("{}{JSON}", bearer(&token)),
        padded.as_bytes(),
    );
    assert_eq!(accepted.status, 200, "{}", accepted.body);
}

#[test]
fn tokens_expire_refresh_once_and_logouts_survive_a_restart() {
    let mut server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_HTTP_JWT_ACCESS_TOKEN_EXPIRY", "2 s")
            .env("IGGY_HTTP_JWT_CLOCK_SKEW", "0 s"),
    );
    let address = address(&server);

    // Refresh: a new token; the old one is spent.
    let first = login(address);
    let body = format!(r#"{{"token":"{first}"}}"#);
    let refreshed = http_body(
        address,
        "POST",
        "/users/refresh-token",
        JSON,
        body.as_bytes(),
    );
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    let identity: serde_json::Value = serde_json::from_str(&refreshed.body).unwrap();
    let second = identity["access_token"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(first, second);
    assert_eq!(
        http_with(address, "GET", "/streams", &bearer(&first)).status,
        401
    );
    assert_eq!(
        http_with(address, "GET", "/streams", &bearer(&second)).status,
        200
    );
    let twice = http_body(
        address,
        "POST",
        "/users/refresh-token",
        JSON,
        body.as_bytes(),
    );
    assert_eq!(twice.status, 401);

    // Expiry.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        http_with(address, "GET", "/streams", &bearer(&second)).status,
        401
    );

    // A logout is remembered across a restart; a token not logged out keeps working (the
    // generated secret is kept in the data directory).
    server.set_env("IGGY_HTTP_JWT_ACCESS_TOKEN_EXPIRY", "1 h");
    server.restart();
    let address = server.http_address().unwrap();
    let kept = login(address);
    let dropped = login(address);
    assert_eq!(
        http_with(address, "DELETE", "/users/logout", &bearer(&dropped)).status,
        204
    );
    server.restart();
    let address = server.http_address().unwrap();
    assert_eq!(
        http_with(address, "GET", "/streams", &bearer(&kept)).status,
        200
    );
    assert_eq!(
        http_with(address, "GET", "/streams", &bearer(&dropped)).status,
        401
    );
    // A wrong password is 400, as upstream answers it.
    let wrong = http_body(
        address,
        "POST",
        "/users/login",
        JSON,
        br#"{"username":"iggy","password":"nope"}"#,
    );
    assert_eq!((wrong.status, error_id(&wrong)), (400, 42));
}

#[test]
fn https_serves_the_api_with_the_generated_certificate() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    use std::sync::Arc;

    let server = TestServer::start(ServerOptions::new().env("IGGY_HTTP_TLS_ENABLED", "true"));
    let address = address(&server);
    let certificate = server
        .data_path()
        .join("certs")
        .join("http-self-signed.pem");
    let mut roots = rustls::RootCertStore::empty();
    for der in CertificateDer::pem_file_iter(&certificate).expect("the generated certificate") {
        roots.add(der.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connection =
        rustls::ClientConnection::new(Arc::new(config), ServerName::try_from("localhost").unwrap())
            .unwrap();
    let socket = TcpStream::connect(address).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut tls = rustls::StreamOwned::new(connection, socket);
    tls.write_all(b"GET /ping HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let response = read_response(&mut tls, "GET", "/ping");
    assert_eq!((response.status, response.body.as_str()), (200, "pong"));

    // Clear text on the HTTPS port gets no answer in clear text.
    let mut plain = TcpStream::connect(address).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    plain
        .write_all(b"GET /ping HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(!String::from_utf8_lossy(&answer).contains("pong"));
}
