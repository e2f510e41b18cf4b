//! Fuzzes the HTTP API's request parsers (`http::bodies`): arbitrary bytes as every JSON body
//! the API takes (send with its base64 payloads and headers, users with permissions, topics,
//! offsets, snapshot names...) and as a path with a query string. None may panic.
//!
//! Input: the first line is the request target, the rest the body.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (target, body) = match data.iter().position(|&byte| byte == b'\n') {
        Some(end) => (&data[..end], &data[end + 1..]),
        None => (&data[..0], data),
    };
    let target = String::from_utf8_lossy(target);
    let _ = rill_server::http::parse_everything(body, &target);
});
