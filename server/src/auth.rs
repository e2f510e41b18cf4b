//! Password hashing and login. Passwords are stored only as Argon2id PHC strings (salted, slow).

use argon2::password_hash::{Output, ParamsString, PasswordHash, SaltString, rand_core::OsRng};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use rill_core::ErrorCode;
use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::ptr::NonNull;
use std::sync::{Condvar, Mutex, MutexGuard, Once, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Length rules of protocol.md 4.2.
pub const USERNAME_LENGTH: std::ops::RangeInclusive<usize> = 3..=50;
pub const PASSWORD_LENGTH: std::ops::RangeInclusive<usize> = 3..=100;

/// Argon2id's working memory (19 MiB with the default parameters) in an anonymous mapping of its
/// own. Allocated through the global allocator (mimalloc), those pages stayed resident after the
/// first password check: an idle server held 36 MiB instead of 22 after creating its root user,
/// and 19 MiB more after any login. A released mapping is kept for the next check for
/// [`LINGER`] (see [`Spares`]), then unmapped.
struct ArgonMemory {
    ptr: NonNull<c_void>,
    blocks: usize,
}

// SAFETY: the mapping is owned by this value alone (nothing else points into it), so moving it
// to another thread moves the only access to it.
unsafe impl Send for ArgonMemory {}

impl ArgonMemory {
    fn new(blocks: usize) -> Option<ArgonMemory> {
        use nix::sys::mman::{MapFlags, ProtFlags, mmap_anonymous};
        let len = NonZeroUsize::new(blocks.checked_mul(Block::SIZE)?)?;
        // SAFETY: a fresh private anonymous mapping aliases nothing; it is unmapped only in Drop.
        let ptr = unsafe {
            mmap_anonymous(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE,
            )
        }
        .ok()?;
        Some(ArgonMemory { ptr, blocks })
    }
}

impl AsMut<[Block]> for ArgonMemory {
    fn as_mut(&mut self) -> &mut [Block] {
        // SAFETY: the mapping holds `blocks` page-aligned Blocks (plain u64 arrays, valid for any
        // bytes: zero-filled when fresh, a previous check's blocks when reused, which Argon2
        // overwrites before reading), and `&mut self` makes this the only reference to it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<Block>(), self.blocks) }
    }
}

impl Drop for ArgonMemory {
    fn drop(&mut self) {
        // SAFETY: `ptr` and the length are exactly what mmap returned and nothing borrows it.
        let _ = unsafe { nix::sys::mman::munmap(self.ptr, self.blocks * Block::SIZE) };
    }
}

/// How long a released working memory waits for the next password check. Logins come in bursts
/// (a client starting its producers and consumers, a reconnecting fleet), and a fresh mapping's
/// first touch of 19 MiB costs a login 10 ms more on a VM that hands freed pages back to its host
/// (27 ms against 17 ms, measured on this project's VM): CPU taken from the shards while their
/// clients are busy. After this long without a check the memory goes, so an idle server stays
/// small.
const LINGER: Duration = Duration::from_secs(5);
/// At most this many released mappings are kept (checks run one per shard at once).
const MAX_SPARES: usize = 4;

/// The released working memories, oldest first, and the thread that unmaps them once they have
/// lingered. The thread starts with the first check and sleeps while nothing is kept.
struct Spares {
    kept: Mutex<Vec<(ArgonMemory, Instant)>>,
    released: Condvar,
    linger: Duration,
}

impl Spares {
    fn new(linger: Duration) -> Spares {
        Spares {
            kept: Mutex::new(Vec::new()),
            released: Condvar::new(),
            linger,
        }
    }

    /// The process's spares, their reaper started.
    fn get() -> &'static Spares {
        static SPARES: OnceLock<Spares> = OnceLock::new();
        static REAPER: Once = Once::new();
        let spares = SPARES.get_or_init(|| Spares::new(LINGER));
        REAPER.call_once(|| spares.start_reaper());
        spares
    }

    fn start_reaper(&'static self) {
        // Should the thread not start, mappings are still reused; they are just never unmapped
        // (at most MAX_SPARES of them).
        let _ = std::thread::Builder::new()
            .name("argon2-spares".into())
            .spawn(|| self.reap());
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(ArgonMemory, Instant)>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A kept mapping of `blocks` blocks (the newest), or a fresh one.
    fn take(&self, blocks: usize) -> Option<ArgonMemory> {
        let mut kept = self.lock();
        match kept.iter().rposition(|(memory, _)| memory.blocks == blocks) {
            Some(found) => Some(kept.remove(found).0),
            None => {
                drop(kept);
                ArgonMemory::new(blocks)
            }
        }
    }

    fn give_back(&self, memory: ArgonMemory) {
        let mut kept = self.lock();
        let evicted = (kept.len() >= MAX_SPARES).then(|| kept.remove(0));
        kept.push((memory, Instant::now()));
        drop(kept);
        self.released.notify_one();
        drop(evicted);
    }

    /// Unmaps every mapping once it has lingered, for ever.
    fn reap(&self) -> ! {
        let mut kept = self.lock();
        loop {
            let now = Instant::now();
            let expired = kept
                .iter()
                .take_while(|(_, released)| now.duration_since(*released) >= self.linger)
                .count();
            if expired > 0 {
                let gone: Vec<_> = kept.drain(..expired).collect();
                drop(kept);
                // Unmapped without the lock held.
                drop(gone);
                kept = self.lock();
                continue;
            }
            kept = match kept.first() {
                None => self
                    .released
                    .wait(kept)
                    .unwrap_or_else(PoisonError::into_inner),
                Some((_, oldest)) => {
                    let left = self.linger.saturating_sub(now.duration_since(*oldest));
                    self.released
                        .wait_timeout(kept, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
    }

    #[cfg(test)]
    fn kept(&self) -> usize {
        self.lock().len()
    }
}

/// Whether a check's working memory waits for the next check afterwards.
#[derive(Clone, Copy)]
enum Afterwards {
    /// Logins: they come in bursts.
    Keep,
    /// Creating a user or a password: rare, and a new server's first one (its root user) should
    /// not leave 19 MiB resident while it sits idle.
    Unmap,
}

/// Runs Argon2 over `password` and the decoded `salt` into `output_len` bytes.
fn argon2_output(
    argon: &Argon2<'_>,
    password: &[u8],
    salt: &[u8],
    output_len: usize,
    afterwards: Afterwards,
) -> Option<Vec<u8>> {
    let spares = Spares::get();
    let mut memory = spares.take(argon.params().block_count())?;
    let mut output = vec![0u8; output_len];
    let hashed = argon.hash_password_into_with_memory(password, salt, &mut output, &mut memory);
    match afterwards {
        Afterwards::Keep => spares.give_back(memory),
        Afterwards::Unmap => drop(memory),
    }
    hashed.ok()?;
    Some(output)
}

/// An Argon2id PHC string with the default parameters and a random salt.
pub fn hash_password(password: &str) -> Result<String, ErrorCode> {
    let failed = |what: &str| {
        tracing::error!(what, "password hashing failed");
        ErrorCode::Error
    };
    let salt = SaltString::generate(&mut OsRng);
    let argon = Argon2::default();
    let mut salt_bytes = [0u8; 64];
    let salt_bytes = salt
        .as_salt()
        .decode_b64(&mut salt_bytes)
        .map_err(|_| failed("salt"))?;
    let output = argon2_output(
        &argon,
        password.as_bytes(),
        salt_bytes,
        Params::DEFAULT_OUTPUT_LEN,
        Afterwards::Unmap,
    )
    .ok_or_else(|| failed("argon2"))?;
    let hash = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(argon.params()).map_err(|_| failed("parameters"))?,
        salt: Some(salt.as_salt()),
        hash: Some(Output::new(&output).map_err(|_| failed("output"))?),
    };
    Ok(hash.to_string())
}

/// Whether `password` matches the stored PHC string (any Argon2 variant and parameters).
pub fn verify_password(password: &str, stored_hash: &str) -> bool {
    let verify = || -> Option<bool> {
        let hash = PasswordHash::new(stored_hash).ok()?;
        let algorithm = Algorithm::try_from(hash.algorithm).ok()?;
        let version = match hash.version {
            Some(version) => Version::try_from(version).ok()?,
            None => Version::default(),
        };
        let params = Params::try_from(&hash).ok()?;
        let expected = hash.hash?;
        let mut salt_bytes = [0u8; 64];
        let salt_bytes = hash.salt?.decode_b64(&mut salt_bytes).ok()?;
        let argon = Argon2::new(algorithm, version, params);
        let output = argon2_output(
            &argon,
            password.as_bytes(),
            salt_bytes,
            expected.len(),
            Afterwards::Keep,
        )?;
        // Output's equality is constant-time.
        Some(Output::new(&output).ok()? == expected)
    };
    verify().unwrap_or(false)
}

/// A valid Argon2id hash of a random password nobody knows: logins for unknown usernames are
/// checked against it, so they cost what a known user's wrong password costs.
pub fn dummy_password_hash() -> &'static str {
    static HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    // Hashing fails only if the Argon2 parameters are wrong; an empty hash then matches nothing.
    HASH.get_or_init(|| hash_password(&generate_password()).unwrap_or_default())
}

/// Bounds how many Argon2id computations run at once, process-wide. Each takes ~19 MiB and tens
/// of milliseconds of CPU on the blocking pool; a login storm used to fan out over as many pool
/// threads, reaching 1.5 GB of resident memory with ten clients on two cores. Logins now queue
/// for a permit instead (one per shard by default).
pub struct PasswordChecks {
    permits: flume::Sender<()>,
    returned: flume::Receiver<()>,
}

/// A held permit; dropping it (also when the login is abandoned mid-way) frees it.
struct Permit<'a>(&'a flume::Receiver<()>);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let _ = self.0.try_recv();
    }
}

impl PasswordChecks {
    pub fn new(concurrency: usize) -> Self {
        let (permits, returned) = flume::bounded(concurrency.max(1));
        PasswordChecks { permits, returned }
    }

    /// Runs `work` on the blocking pool once a permit is free.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ErrorCode> {
        self.permits
            .send_async(())
            .await
            .map_err(|_| ErrorCode::Error)?;
        let _permit = Permit(&self.returned);
        compio::runtime::spawn_blocking(work)
            .await
            .map_err(|_| ErrorCode::Error)
    }
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
        assert!(!verify_password(
            "secret",
            "$argon2id$v=19$m=19456,t=2,p=1$bad"
        ));
        assert!(!verify_password("Secret", &hash));
        assert!(!verify_password("secret", "not a hash"));
        let generated = generate_password();
        assert!((20..40).contains(&generated.len()));
    }

    #[test]
    fn a_reused_working_memory_hashes_as_a_fresh_one() {
        let argon = Argon2::default();
        let salt = b"a salt of sixteen bytes";
        let mut reference = [0u8; 32];
        argon
            .hash_password_into(b"secret", salt, &mut reference)
            .unwrap();
        let spares = Spares::new(Duration::from_secs(60));
        let blocks = argon.params().block_count();
        let mut memory = spares.take(blocks).unwrap();
        // What a previous check would leave behind, and worse.
        for block in memory.as_mut() {
            block.as_mut().fill(0xDEAD_BEEF_DEAD_BEEF);
        }
        spares.give_back(memory);
        assert_eq!(spares.kept(), 1);
        let mut reused = spares.take(blocks).unwrap();
        assert_eq!(spares.kept(), 0, "the kept mapping was taken");
        let mut output = [0u8; 32];
        argon
            .hash_password_into_with_memory(b"secret", salt, &mut output, &mut reused)
            .unwrap();
        assert_eq!(output, reference);
    }

    #[test]
    fn spares_are_bounded_and_unmapped_once_they_have_lingered() {
        let spares: &'static Spares = Box::leak(Box::new(Spares::new(Duration::from_millis(100))));
        spares.start_reaper();
        for _ in 0..MAX_SPARES + 2 {
            spares.give_back(ArgonMemory::new(8).unwrap());
        }
        assert_eq!(spares.kept(), MAX_SPARES);
        // Another size is mapped afresh, leaving the kept ones.
        let other = spares.take(16).unwrap();
        assert_eq!((other.blocks, spares.kept()), (16, MAX_SPARES));
        let deadline = Instant::now() + Duration::from_secs(10);
        while spares.kept() > 0 {
            assert!(Instant::now() < deadline, "spares were never unmapped");
            std::thread::sleep(Duration::from_millis(20));
        }
        // A release after the reaper emptied the list is reaped too.
        spares.give_back(other);
        assert_eq!(spares.kept(), 1);
        while spares.kept() > 0 {
            assert!(
                Instant::now() < deadline,
                "a later spare was never unmapped"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn hashes_interoperate_with_the_argon2_crates_own_hasher() {
        use argon2::password_hash::{PasswordHasher, PasswordVerifier};
        // Ours verifies with the reference verifier, and the reference hash with ours, so hashes
        // stored by earlier versions keep working.
        let ours = hash_password("secret").unwrap();
        let parsed = PasswordHash::new(&ours).unwrap();
        assert!(
            Argon2::default()
                .verify_password(b"secret", &parsed)
                .is_ok()
        );
        assert!(
            Argon2::default()
                .verify_password(b"other", &parsed)
                .is_err()
        );
        let salt = SaltString::generate(&mut OsRng);
        let reference = Argon2::default()
            .hash_password(b"secret", &salt)
            .unwrap()
            .to_string();
        assert!(verify_password("secret", &reference));
        assert!(!verify_password("secreT", &reference));
        // Other parameters and variants, as a PHC string may carry them.
        let argon2i = Argon2::new(
            Algorithm::Argon2i,
            Version::V0x10,
            Params::new(1024, 1, 1, None).unwrap(),
        )
        .hash_password(b"pw", &salt)
        .unwrap()
        .to_string();
        assert!(verify_password("pw", &argon2i));
        assert!(!verify_password("pw2", &argon2i));
    }

    #[compio::test]
    async fn password_checks_never_exceed_their_permits() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let checks = Arc::new(PasswordChecks::new(2));
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let work = |running: Arc<AtomicUsize>, peak: Arc<AtomicUsize>| {
            move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(30));
                running.fetch_sub(1, Ordering::SeqCst);
            }
        };
        let tasks: Vec<_> = (0..6)
            .map(|_| {
                let checks = checks.clone();
                let work = work(running.clone(), peak.clone());
                compio::runtime::spawn(async move { checks.run(work).await })
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        assert_eq!(
            peak.load(Ordering::SeqCst),
            2,
            "at most two at once, and two did overlap"
        );
        assert_eq!(checks.returned.len(), 0, "every permit was returned");
    }
}
