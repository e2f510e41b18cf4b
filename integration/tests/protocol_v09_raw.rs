//! The 0.9 protocol byte by byte (protocol-0.9.md sections 2, 3, 6): golden replies to the
//! captured requests of section 11, repeated requests answered from the reply cache and never
//! applied twice, evictions for sessions, versions and legacy logins, and hostile frames that
//! close only their own connection while 0.8 and 0.9 clients on the same port carry on.

use rill_integration::raw::{RawClient, codes};
use rill_integration::raw_v09::{
    Client, OP_CREATE_STREAM, OP_REGISTER, Request, frame, login_body, u32_at,
};
use rill_integration::{ServerOptions, TestServer};
use std::time::{Duration, Instant};

/// The GetStreams reply's stream names (records: 32 fixed bytes, name, options block).
fn stream_names(body: &[u8]) -> Vec<String> {
    let mut names = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let len = body[at + 32] as usize;
        names.push(String::from_utf8(body[at + 33..at + 33 + len].to_vec()).unwrap());
        let options = u32_at(body, at + 33 + len) as usize;
        at += 33 + len + 4 + options;
    }
    names
}

#[test]
fn golden_replies_to_the_captured_login_ping_and_create_stream() {
    let server = TestServer::start_default();
    let mut client = Client::connect(server.address());
    // 11.1: LoginRegister for iggy/iggy; the body is byte for byte the captured one.
    let body = login_body(0x2C00, "iggy", "iggy");
    assert_eq!(
        &body[..],
        b"\x00\x2c\x00\x00\x08rust-sdk\x060.11.0\x04iggy\x04iggy\x00\x00\x00\x00"
    );
    let login = client.login_root();
    assert_eq!(login.operation(), OP_REGISTER);
    assert_eq!(
        &login.header[160..176],
        &client.client.to_le_bytes(),
        "client echoed"
    );
    assert_eq!(&login.body[0..8], &[0; 8], "result count 0, user id 0");
    assert!(client.session > 0, "a session number");
    assert_eq!(u32_at(&login.body, 16), 0x2C00, "server protocol version");
    let version_len = login.body[20] as usize;
    assert_eq!(login.body.len(), 21 + version_len);

    // 11.2: Ping after login, a bare reply header echoing operation and request.
    let ping = client.call(&client.read_only(1), &[]);
    assert_eq!((ping.command(), ping.operation(), ping.status()), (8, 2, 0));
    assert_eq!((ping.request(), ping.body.len()), (1, 0));
    assert_eq!(u32_at(&ping.header, 48), 256);

    // 11.3: CreateStream "s", with the captured request checksum.
    let create = client.replicated(OP_CREATE_STREAM);
    let bytes = frame(&create, b"\x01s");
    assert_eq!(&bytes[144..152], &0x20b87c5695dd0912u64.to_le_bytes());
    let reply = client.call(&create, b"\x01s");
    assert_eq!((reply.operation(), reply.status()), (OP_CREATE_STREAM, 0));
    assert_eq!(reply.body.len(), 4 + 32 + 2 + 4);
    assert_eq!(&reply.body[0..8], &[0; 8], "result 0, stream id 0");
    assert_eq!(&reply.body[16..36], &[0; 20], "no topics, size or messages");
    assert_eq!(
        &reply.body[36..],
        b"\x01s\x00\x00\x00\x00",
        "name, empty options"
    );
}

#[test]
fn a_repeated_request_is_answered_again_and_never_applied_twice() {
    let server = TestServer::start_default();
    let mut client = Client::connect(server.address());
    client.login_root();
    let first = client.replicated(OP_CREATE_STREAM);
    let reply = client.call(&first, b"\x01a");
    assert_eq!(u32_at(&reply.body, 0), 0);
    // The identical frame again: the same reply, byte for byte, and still one stream.
    let again = client.call(&first, b"\x01a");
    assert_eq!(
        (again.header, again.body.clone()),
        (reply.header, reply.body.clone())
    );
    // The same number with another body: refused, not applied.
    let other = client.call(&first, b"\x01b");
    assert_eq!(u32_at(&other.body, 0), 1, "a result entry");
    assert_eq!(u32_at(&other.body, 8), 59, "RequestAlreadyApplied");
    // Five more requests push the first out of the cache: then it is 59 too.
    for name in ["c", "d", "e", "f", "g"] {
        let request = client.replicated(OP_CREATE_STREAM);
        let body = [&[1u8][..], name.as_bytes()].concat();
        assert_eq!(u32_at(&client.call(&request, &body).body, 0), 0);
    }
    let late = client.call(&first, b"\x01a");
    assert_eq!(u32_at(&late.body, 8), 59);
    let streams = client.call(&client.read_only(201), &[]);
    assert_eq!(
        stream_names(&streams.body),
        vec!["a", "c", "d", "e", "f", "g"],
        "each create applied once"
    );
    // A body that does not match its stamped checksum is InvalidFormat.
    let mut forged = frame(&client.replicated(OP_CREATE_STREAM), b"\x01x");
    forged[257] = b'y';
    client.write(&forged).unwrap();
    assert_eq!(client.read().unwrap().status(), 4);
}

#[test]
fn sessions_versions_and_legacy_logins_are_refused_with_evictions() {
    let server = TestServer::start_default();
    let mut client = Client::connect(server.address());
    // A replicated request without a session: NoSession.
    let create = client.replicated(OP_CREATE_STREAM);
    assert_eq!(client.call(&create, b"\x01s").eviction_reason(), Some(1));
    // A read before login: status 40, the connection stays for the login.
    assert_eq!(client.call(&client.read_only(201), &[]).status(), 40);
    // 0.8's LoginUser code on a 0.9 connection: MalformedLogin.
    let legacy = client.read_only(38);
    assert_eq!(
        client.call(&legacy, b"\x04iggy\x04iggy").eviction_reason(),
        Some(15)
    );
    // A protocol version outside 0.11.x: IncompatibleProtocol, with the server's range.
    let register = Request {
        client: 9,
        request: 0,
        operation: OP_REGISTER,
        session: 0,
        code: 0,
        stamp: true,
    };
    let old = client.call(&register, &login_body(0x2800, "iggy", "iggy"));
    assert_eq!(old.eviction_reason(), Some(14));
    assert_eq!(
        (u32_at(&old.header, 144), u32_at(&old.header, 148)),
        (0x2C00, 0x2C00)
    );
    // Wrong password: InvalidCredentials; a body without a version prefix: MalformedLogin.
    let wrong = client.call(&register, &login_body(0x2C00, "iggy", "wrong"));
    assert_eq!(wrong.eviction_reason(), Some(9));
    assert_eq!(
        client.call(&register, b"\x00\x2c").eviction_reason(),
        Some(15)
    );
    // The connection is still usable for a good login.
    client.login_root();
    assert_eq!(client.call(&client.read_only(1), &[]).status(), 0);
    assert_eq!(client.call(&client.read_only(201), &[]).status(), 0);
    // A failed login on a logged-in connection leaves no authority behind.
    let wrong = client.call(&register, &login_body(0x2C00, "iggy", "wrong"));
    assert_eq!(wrong.eviction_reason(), Some(9));
    assert_eq!(client.call(&client.read_only(201), &[]).status(), 40);
}

/// Untrusted headers close only their own connection; a flood of bad logins and garbage from
/// other connections leaves a 0.8 and a 0.9 client on the same port answering promptly.
#[test]
fn hostile_frames_close_only_their_connection() {
    let server = TestServer::start_default();
    let mut old = RawClient::connect(server.address());
    old.login_root();
    let mut new = Client::connect(server.address());
    new.login_root();

    let closed = |bytes: &[u8]| {
        let mut bad = Client::connect(server.address());
        bad.write(bytes).unwrap();
        bad.read().is_err()
    };
    let mut reply_header = frame(&new.read_only(1), &[]);
    reply_header[60] = 8;
    assert!(closed(&reply_header), "a reply header sent as a request");
    let mut huge = frame(&new.read_only(1), &[]);
    huge[48..52].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(closed(&huge), "a frame size beyond the limit");
    let mut short = frame(&new.read_only(1), &[]);
    short[48..52].copy_from_slice(&100u32.to_le_bytes());
    assert!(closed(&short), "a frame size below the header");
    let mut unknown = frame(&new.read_only(1), &[]);
    unknown[176] = 99;
    assert!(closed(&unknown), "an unknown operation");

    // A register flood from 40 connections while the two good clients keep working.
    let address = server.address();
    let flood: Vec<_> = (0..40)
        .map(|i| {
            std::thread::spawn(move || {
                let mut bad = Client::connect(address);
                let register = Request {
                    client: 1000 + i,
                    request: 0,
                    operation: OP_REGISTER,
                    session: 0,
                    code: 0,
                    stamp: true,
                };
                for _ in 0..5 {
                    if bad
                        .write(&frame(&register, &login_body(0x2C00, "iggy", "nope")))
                        .is_err()
                        || bad.read().is_err()
                    {
                        break;
                    }
                }
            })
        })
        .collect();
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    while flood.iter().any(|thread| !thread.is_finished())
        && started.elapsed() < Duration::from_secs(30)
    {
        let ping = Instant::now();
        old.assert_ping();
        assert_eq!(new.call(&new.read_only(1), &[]).status(), 0);
        slowest = slowest.max(ping.elapsed());
    }
    flood.into_iter().for_each(|thread| thread.join().unwrap());
    assert!(
        slowest < Duration::from_secs(2),
        "pings took up to {slowest:?} during the flood"
    );
    assert_eq!(old.request(codes::GET_STREAMS, &[]).status, 0);
    assert_eq!(new.call(&new.read_only(201), &[]).status(), 0);
}

/// Upstream counts every 0.9 request as a heartbeat (the SDK's raw clients send no Ping): with
/// heartbeats verified every second, a session that keeps sending reads is never evicted.
#[test]
fn every_0_9_request_counts_as_a_heartbeat() {
    let server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_HEARTBEAT_ENABLED", "true")
            .env("IGGY_HEARTBEAT_INTERVAL", "1 s"),
    );
    let mut client = Client::connect(server.address());
    client.login_root();
    for _ in 0..8 {
        std::thread::sleep(Duration::from_millis(400));
        let reply = client.call(&client.read_only(201), &[]);
        assert_eq!(
            (reply.command(), reply.status()),
            (8, 0),
            "served, not evicted"
        );
    }
}

/// Upstream's verifier expires only consumer-group members (protocol-0.9.md 3.7): a silent
/// 0.9 session outside any group is served when it comes back, while a silent member gets an
/// unasked eviction (reason 13, StaleClient) and its connection closes.
#[test]
fn only_silent_consumer_group_members_miss_their_heartbeats() {
    let server = TestServer::start(
        ServerOptions::new()
            .env("IGGY_HEARTBEAT_ENABLED", "true")
            .env("IGGY_HEARTBEAT_INTERVAL", "1 s"),
    );
    let numeric_zero = [1u8, 4, 0, 0, 0, 0];
    let mut member = Client::connect(server.address());
    member.login_root();
    let ok = |reply: rill_integration::raw_v09::Reply| {
        assert_eq!(
            (reply.command(), reply.status()),
            (8, 0),
            "{:?}",
            reply.body
        );
        assert_eq!(&reply.body[..4], &[0, 0, 0, 0], "result section: success");
    };
    let request = member.replicated(OP_CREATE_STREAM);
    ok(member.call(&request, b"\x01s"));
    let topic = [&numeric_zero[..], &1u32.to_le_bytes(), b"\x01t"].concat();
    let request = member.replicated(132);
    ok(member.call(&request, &topic));
    let group = [&numeric_zero[..], &numeric_zero, b"\x01g"].concat();
    let request = member.replicated(139);
    ok(member.call(&request, &group));
    let join = [&numeric_zero[..], &numeric_zero, &numeric_zero].concat();
    let request = member.replicated(148);
    ok(member.call(&request, &join));
    // The member's last request was the join: its silence starts now.
    let started = Instant::now();

    let mut outsider = Client::connect(server.address());
    outsider.login_root();
    let evicted = member.read().expect("an eviction arrives unasked");
    assert_eq!(evicted.eviction_reason(), Some(13), "StaleClient");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1100) && waited < Duration::from_secs(5),
        "after 1.2 intervals: {waited:?}"
    );
    assert!(member.read().is_err(), "then the connection closes");

    std::thread::sleep(Duration::from_millis(2500).saturating_sub(started.elapsed()));
    let reply = outsider.call(&outsider.read_only(201), &[]);
    assert_eq!(
        (reply.command(), reply.status()),
        (8, 0),
        "never a member: still served"
    );
}
