//! Starts that must fail with a clear message: certificate problems, a port already taken.

use rill_integration::binary::run_to_exit;
use rill_integration::{ServerOptions, TestServer};

/// Extra environment of a server start.
type Environment<'a> = &'a [(&'a str, String)];

#[test]
fn certificate_problems_stop_the_start_with_a_clear_message() {
    // Proves: a missing certificate file, a key file that holds no key, and certificate files
    // given without a key each stop the server at start with a message naming the section and
    // the file, instead of starting without TLS.
    let dir = tempfile::tempdir().unwrap();
    let not_a_key = dir.path().join("not-a-key.pem");
    std::fs::write(&not_a_key, "hello\n").unwrap();
    let cases: [(Environment, &[&str]); 3] = [
        (
            &[
                ("IGGY_TCP_TLS_ENABLED", "true".into()),
                (
                    "IGGY_TCP_TLS_CERT_FILE",
                    dir.path().join("missing.pem").display().to_string(),
                ),
                ("IGGY_TCP_TLS_KEY_FILE", not_a_key.display().to_string()),
            ],
            &["tcp.tls", "missing.pem"],
        ),
        (
            &[
                (
                    "IGGY_QUIC_CERTIFICATE_CERT_FILE",
                    not_a_key.display().to_string(),
                ),
                (
                    "IGGY_QUIC_CERTIFICATE_KEY_FILE",
                    not_a_key.display().to_string(),
                ),
            ],
            &["quic.certificate", "not-a-key.pem"],
        ),
        (
            &[
                ("IGGY_TCP_TLS_ENABLED", "true".into()),
                ("IGGY_TCP_TLS_CERT_FILE", not_a_key.display().to_string()),
            ],
            &["tcp.tls", "together"],
        ),
    ];
    for (env, expected) in cases {
        let mut all = vec![("IGGY_HTTP_ENABLED", "false")];
        all.extend(env.iter().map(|(k, v)| (*k, v.as_str())));
        let (started, text) = run_to_exit(dir.path(), &all);
        assert!(!started, "{env:?} must stop the start:\n{text}");
        for needle in expected {
            assert!(text.contains(needle), "{env:?}: no {needle:?} in:\n{text}");
        }
    }
}

#[test]
fn a_second_server_on_a_taken_port_is_refused() {
    // Proves: the listeners use SO_REUSEPORT, which would let a second broker started by the same
    // user share a port silently and take half its clients; the start-up probe refuses that for
    // QUIC (UDP) and TCP alike, naming the address.
    let server = TestServer::start(ServerOptions::new());
    let dir = tempfile::tempdir().unwrap();
    for (tcp, quic, needle) in [
        (
            "127.0.0.1:0".to_string(),
            server.quic_address().to_string(),
            "QUIC",
        ),
        (server.tcp_address(), "127.0.0.1:0".to_string(), "TCP"),
    ] {
        let env = [
            ("IGGY_TCP_ADDRESS", tcp.as_str()),
            ("IGGY_QUIC_ADDRESS", quic.as_str()),
            ("IGGY_HTTP_ENABLED", "false"),
        ];
        let (started, text) = run_to_exit(dir.path(), &env);
        assert!(
            !started,
            "{needle}: a taken port must stop the start:\n{text}"
        );
        assert!(
            text.contains(needle) && text.contains("in use"),
            "{needle}:\n{text}"
        );
    }
}
