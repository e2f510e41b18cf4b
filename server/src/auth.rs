//! Password hashing and login. Passwords are stored only as Argon2id PHC strings (salted, slow).

use argon2::Argon2;
use argon2::password_hash::{
    PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng,
};
use rill_core::ErrorCode;

/// Length rules of protocol.md 4.2.
pub const USERNAME_LENGTH: std::ops::RangeInclusive<usize> = 3..=50;
pub const PASSWORD_LENGTH: std::ops::RangeInclusive<usize> = 3..=100;

pub fn hash_password(password: &str) -> Result<String, ErrorCode> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|error| {
            tracing::error!(%error, "password hashing failed");
            ErrorCode::Error
        })
}

pub fn verify_password(password: &str, stored_hash: &str) -> bool {
    PasswordHash::new(stored_hash).is_ok_and(|hash| {
        Argon2::default()
            .verify_password(password.as_bytes(), &hash)
            .is_ok()
    })
}

/// A random password for a root user created without given credentials (20 to 39 characters).
pub fn generate_password() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    let mut rng = rand::rng();
    let len = rng.random_range(20..40);
    (0..len)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// A new personal access token: 64 random alphanumeric characters (about 380 bits).
pub fn generate_token() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..64)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// What is stored for a token: hex SHA-256. Tokens are long random secrets, so a fast hash is
/// enough, and it lets a login find its token with one map lookup.
pub fn token_hash(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_verify_only_the_right_password() {
        let hash = hash_password("secret").unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password("secret", &hash));
        assert!(!verify_password("Secret", &hash));
        assert!(!verify_password("secret", "not a hash"));
        let generated = generate_password();
        assert!((20..40).contains(&generated.len()));
    }
}
