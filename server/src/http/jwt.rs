//! Access tokens (`[http.jwt]`): HMAC-signed JWTs, as upstream issues them at login, and the
//! logged-out tokens, kept in `state/jwt.revoked` so that a logout survives a restart.
//!
//! Why written here rather than with a JWT crate: HS256/384/512 is one HMAC from ring, the
//! crypto backend already built for TLS, over two base64url segments; the checks that matter
//! (signature in constant time, expiry with clock skew, not-before, issuer, audience, revocation,
//! the user still being the one the token was issued to) are listed below in one place.
//!
//! A token also carries the user's creation time (`uca`, ours): a user id freed by a deletion
//! and reused by a new user must not let the old user's tokens act as the new one.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rill_core::ErrorCode;
use ring::hmac;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::config::HttpJwtConfig;

/// What a token says.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Claims {
    pub jti: String,
    pub iss: String,
    pub aud: String,
    pub sub: u32,
    pub iat: u64,
    pub exp: u64,
    pub nbf: u64,
    /// The user's creation time (microseconds), ours.
    #[serde(default)]
    pub uca: u64,
}

pub struct Tokens {
    algorithm: &'static str,
    signing: hmac::Key,
    verifying: hmac::Key,
    issuer: String,
    audience: String,
    valid_issuers: Vec<String>,
    valid_audiences: Vec<String>,
    expiry_secs: u64,
    skew_secs: u64,
    not_before_secs: u64,
    /// Logged-out tokens by id, with their expiry (unix seconds), until they expire.
    revoked: Mutex<HashMap<String, u64>>,
    revoked_file: PathBuf,
}

const SECRET_FILE: &str = "jwt.secret";
const REVOKED_FILE: &str = "jwt.revoked";

impl Tokens {
    /// Reads the secrets (generating one in `state_dir` when none is configured) and the
    /// logged-out tokens.
    pub fn open(config: &HttpJwtConfig, state_dir: &Path) -> Result<Tokens, String> {
        let (algorithm, kind) = match config.algorithm.to_ascii_uppercase().as_str() {
            "HS256" => ("HS256", hmac::HMAC_SHA256),
            "HS384" => ("HS384", hmac::HMAC_SHA384),
            "HS512" => ("HS512", hmac::HMAC_SHA512),
            other => return Err(format!("http.jwt.algorithm: {other} is not offered")),
        };
        let decode = |key: &str, secret: &str| -> Result<Vec<u8>, String> {
            if config.use_base64_secret {
                STANDARD
                    .decode(secret.trim())
                    .map_err(|error| format!("http.jwt.{key} is not base64: {error}"))
            } else {
                Ok(secret.as_bytes().to_vec())
            }
        };
        let encoding = match config.encoding_secret.0.as_str() {
            "" => stored_secret(state_dir)?,
            secret => decode("encoding_secret", secret)?,
        };
        let decoding = match config.decoding_secret.0.as_str() {
            "" => encoding.clone(),
            secret => decode("decoding_secret", secret)?,
        };
        if encoding.is_empty() || decoding.is_empty() {
            return Err("http.jwt: the secret is empty".into());
        }
        let revoked_file = state_dir.join(REVOKED_FILE);
        let revoked = read_revoked(&revoked_file);
        Ok(Tokens {
            algorithm,
            signing: hmac::Key::new(kind, &encoding),
            verifying: hmac::Key::new(kind, &decoding),
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            valid_issuers: config.valid_issuers.clone(),
            valid_audiences: config.valid_audiences.clone(),
            expiry_secs: config.access_token_expiry.0.as_secs().max(1),
            skew_secs: config.clock_skew.0.as_secs(),
            not_before_secs: config.not_before.0.as_secs(),
            revoked: Mutex::new(revoked),
            revoked_file,
        })
    }

    /// A new token for `user_id`, and its expiry (unix seconds).
    pub fn issue(&self, user_id: u32, user_created_at: u64) -> (String, u64) {
        let now = now_secs();
        let mut id = [0u8; 16];
        rand::Rng::fill(&mut rand::rng(), &mut id);
        let claims = Claims {
            jti: id.iter().map(|byte| format!("{byte:02x}")).collect(),
            iss: self.issuer.clone(),
            aud: self.audience.clone(),
            sub: user_id,
            iat: now,
            exp: now + self.expiry_secs,
            nbf: now + self.not_before_secs,
            uca: user_created_at,
        };
        (self.sign(&claims), claims.exp)
    }

    fn sign(&self, claims: &Claims) -> String {
        let header = format!(r#"{{"typ":"JWT","alg":"{}"}}"#, self.algorithm);
        let claims = serde_json::to_vec(claims).expect("claims serialise");
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(claims)
        );
        let tag = hmac::sign(&self.signing, signed.as_bytes());
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// The claims of a token this server signed that is in force: signature, algorithm, expiry
    /// and not-before (with `clock_skew`), issuer, audience, and not logged out.
    pub fn verify(&self, token: &str) -> Result<Claims, ErrorCode> {
        self.verify_at(token, now_secs())
    }

    fn verify_at(&self, token: &str, now: u64) -> Result<Claims, ErrorCode> {
        let invalid = ErrorCode::InvalidAccessToken;
        let mut parts = token.trim().split('.');
        let (Some(header), Some(claims), Some(tag), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid);
        };
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid)?;
        let signed = &token.trim()[..header.len() + 1 + claims.len()];
        hmac::verify(&self.verifying, signed.as_bytes(), &tag).map_err(|_| invalid)?;
        #[derive(Deserialize)]
        struct Header {
            alg: String,
        }
        let header: Header = URL_SAFE_NO_PAD
            .decode(header)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or(invalid)?;
        if header.alg != self.algorithm {
            return Err(invalid);
        }
        let claims: Claims = URL_SAFE_NO_PAD
            .decode(claims)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or(invalid)?;
        if claims.exp.saturating_add(self.skew_secs) <= now {
            return Err(invalid);
        }
        if claims.nbf > now.saturating_add(self.skew_secs) {
            return Err(invalid);
        }
        let listed =
            |valid: &[String], value: &str| valid.is_empty() || valid.iter().any(|v| v == value);
        if !listed(&self.valid_issuers, &claims.iss) || !listed(&self.valid_audiences, &claims.aud)
        {
            return Err(invalid);
        }
        if self
            .revoked
            .lock()
            .map(|revoked| revoked.contains_key(&claims.jti))
            .unwrap_or(true)
        {
            return Err(invalid);
        }
        Ok(claims)
    }

    /// Logs a token out for good: it is refused from now on, across restarts, until it
    /// would have expired anyway.
    pub fn revoke(&self, claims: &Claims) {
        let now = now_secs();
        let Ok(mut revoked) = self.revoked.lock() else {
            return;
        };
        revoked.retain(|_, expiry| expiry.saturating_add(self.skew_secs) > now);
        revoked.insert(claims.jti.clone(), claims.exp);
        let text: String = revoked
            .iter()
            .map(|(id, expiry)| format!("{id} {expiry}\n"))
            .collect();
        if let Err(error) = write_private(&self.revoked_file, text.as_bytes()) {
            tracing::error!(path = %self.revoked_file.display(), %error, "cannot record a logged-out token; it is refused until restart only");
        }
    }
}

fn now_secs() -> u64 {
    crate::time::now_micros() / 1_000_000
}

#[allow(
    clippy::disallowed_methods,
    reason = "the HTTP thread at start, never a shard"
)]
fn stored_secret(state_dir: &Path) -> Result<Vec<u8>, String> {
    let path = state_dir.join(SECRET_FILE);
    match std::fs::read(&path) {
        Ok(secret) if secret.len() >= 32 => return Ok(secret),
        Ok(_) => return Err(format!("{}: shorter than 32 bytes", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
    }
    let mut secret = [0u8; 32];
    rand::Rng::fill(&mut rand::rng(), &mut secret);
    let secret: Vec<u8> = secret
        .iter()
        .flat_map(|byte| format!("{byte:02x}").into_bytes())
        .collect();
    write_private(&path, &secret)
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    Ok(secret)
}

#[allow(clippy::disallowed_methods, reason = "the HTTP thread, never a shard")]
fn read_revoked(path: &Path) -> HashMap<String, u64> {
    let now = now_secs();
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let (id, expiry) = line.split_once(' ')?;
            Some((id.to_string(), expiry.trim().parse::<u64>().ok()?))
        })
        .filter(|(_, expiry)| *expiry > now.saturating_sub(3600))
        .collect()
}

/// Replaces `path` with `bytes`, readable by the owner only, through a renamed temporary file.
#[allow(clippy::disallowed_methods, reason = "the HTTP thread, never a shard")]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let temporary = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests;
