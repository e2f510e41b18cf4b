#![allow(clippy::disallowed_methods, reason = "tests")]

use super::*;

fn config() -> HttpJwtConfig {
    let loaded = crate::config::Config::load(None, Vec::<(String, String)>::new()).unwrap();
    loaded.config.http.jwt
}

fn tokens(config: &HttpJwtConfig, dir: &Path) -> Tokens {
    Tokens::open(config, dir).unwrap()
}

#[test]
fn a_token_round_trips_and_every_tampering_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens(&config(), dir.path());
    let (token, expiry) = tokens.issue(7, 1234);
    let claims = tokens.verify(&token).unwrap();
    assert_eq!((claims.sub, claims.uca, claims.exp), (7, 1234, expiry));
    assert_eq!(claims.iss, "iggy.apache.org");
    // Any changed byte of any part, a missing part or an extra one.
    for index in 0..token.len() {
        let mut bytes = token.clone().into_bytes();
        bytes[index] = if bytes[index] == b'A' { b'B' } else { b'A' };
        let Ok(tampered) = String::from_utf8(bytes) else {
            continue;
        };
        if tampered != token {
            assert!(tokens.verify(&tampered).is_err(), "byte {index}");
        }
    }
    assert!(tokens.verify(&format!("{token}.x")).is_err());
    assert!(tokens.verify(token.rsplit_once('.').unwrap().0).is_err());
    assert!(tokens.verify("").is_err());
}

#[test]
fn another_key_another_algorithm_or_audience_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ours = tokens(&config(), dir.path());
    let (token, _) = ours.issue(1, 0);
    let mut other = config();
    other.encoding_secret = crate::config::Secret("another secret".into());
    let theirs = tokens(&other, dir.path());
    assert!(ours.verify(&theirs.issue(1, 0).0).is_err());
    assert!(theirs.verify(&token).is_err());
    let mut longer = config();
    longer.algorithm = "HS512".into();
    let longer = tokens(&longer, dir.path());
    assert!(
        ours.verify(&longer.issue(1, 0).0).is_err(),
        "same secret, other algorithm"
    );
    let mut audience = config();
    audience.valid_audiences = vec!["elsewhere".into()];
    assert!(tokens(&audience, dir.path()).verify(&token).is_err());
}

#[test]
fn expiry_not_before_and_skew() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens(&config(), dir.path());
    let (token, expiry) = tokens.issue(1, 0);
    assert!(
        tokens.verify_at(&token, expiry + 4).is_ok(),
        "within the 5 s skew"
    );
    assert!(tokens.verify_at(&token, expiry + 5).is_err());
    let mut later = config();
    later.not_before = crate::config::units::HumanDuration(std::time::Duration::from_secs(60));
    let later = Tokens::open(&later, dir.path()).unwrap();
    let (token, _) = later.issue(1, 0);
    assert!(later.verify(&token).is_err(), "not yet valid");
}

#[test]
fn the_generated_secret_and_logouts_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let first = tokens(&config(), dir.path());
    let (kept, _) = first.issue(1, 0);
    let (dropped, _) = first.issue(1, 0);
    first.revoke(&first.verify(&dropped).unwrap());
    assert!(first.verify(&dropped).is_err());
    let mode = std::fs::metadata(dir.path().join(SECRET_FILE)).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );
    let second = tokens(&config(), dir.path());
    assert!(second.verify(&kept).is_ok(), "same generated secret");
    assert!(second.verify(&dropped).is_err(), "the logout is remembered");
    let elsewhere = tempfile::tempdir().unwrap();
    assert!(tokens(&config(), elsewhere.path()).verify(&kept).is_err());
}

#[test]
fn base64_secrets_are_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let mut plain = config();
    plain.encoding_secret = crate::config::Secret("0123456789abcdef0123456789abcdef".into());
    let mut encoded = config();
    encoded.use_base64_secret = true;
    encoded.encoding_secret =
        crate::config::Secret(STANDARD.encode("0123456789abcdef0123456789abcdef"));
    let (token, _) = tokens(&plain, dir.path()).issue(3, 0);
    assert!(tokens(&encoded, dir.path()).verify(&token).is_ok());
    encoded.encoding_secret = crate::config::Secret("not base64 !".into());
    assert!(Tokens::open(&encoded, dir.path()).is_err());
}
