//! The replica port's bytes: the handshake that admits a peer, then request and response frames.
//!
//! ```text
//! hello (each side, dialer first):
//!   magic "RILLRAFT" | version u16 (2) | auth u8 (0 off, 1 on) | replica_id u64 |
//!   cluster u64 (XXH3-64 of cluster.name) | nonce [32]
//! proof (with auth on; dialer first, then the acceptor once it has checked the dialer's):
//!   HMAC-SHA256(secret, "rill-replica" | dialer nonce | acceptor nonce | sender replica_id u64)
//! then, any number of times, on the dialer's initiative:
//!   request  [length u32][kind u8][JSON body]      length counts kind and body
//!   response [length u32][status u8][JSON body]    status 0 ok, 1 the request's error
//! ```
//!
//! All integers little-endian. Both nonces are fresh per connection, so a recorded proof is
//! worth nothing on another connection. Any violation closes the connection without an answer.

use ring::hmac;
use std::io;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const MAGIC: &[u8; 8] = b"RILLRAFT";
/// 2: REPLICA_STATE carries the taking-over term, and states and fetches carry
/// `deleted_through`. 3: partitions are led by their assigned leaders in assignment epochs,
/// and PARTITION calls reach them. Nodes of another version refuse each other's connections
/// (upgrade a cluster all at once).
const VERSION: u16 = 3;
const HELLO_LENGTH: usize = 8 + 2 + 1 + 8 + 8 + 32;
const PROOF_CONTEXT: &[u8] = b"rill-replica";
/// Large enough for any metadata entry batch; a peer announcing more is cut off.
pub const MAX_FRAME: u32 = 64 << 20;
/// How long a handshake may take before the connection is dropped.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the cluster's members share: the name and, with auth on, the secrets.
#[derive(Clone)]
pub struct Credentials {
    pub cluster: u64,
    pub secret: Option<hmac::Key>,
    pub previous: Option<hmac::Key>,
}

impl Credentials {
    pub fn new(name: &str, secret: Option<&str>, previous: Option<&str>) -> Self {
        let key = |secret: &str| hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
        Credentials {
            cluster: xxhash_rust::xxh3::xxh3_64(name.as_bytes()),
            secret: secret.map(key),
            previous: previous.filter(|text| !text.is_empty()).map(key),
        }
    }

    fn proof(key: &hmac::Key, dialer: &[u8; 32], acceptor: &[u8; 32], sender: u64) -> Vec<u8> {
        let mut context = hmac::Context::with_key(key);
        context.update(PROOF_CONTEXT);
        context.update(dialer);
        context.update(acceptor);
        context.update(&sender.to_le_bytes());
        context.sign().as_ref().to_vec()
    }

    fn verify(&self, proof: &[u8], dialer: &[u8; 32], acceptor: &[u8; 32], sender: u64) -> bool {
        let mut message = PROOF_CONTEXT.to_vec();
        message.extend_from_slice(dialer);
        message.extend_from_slice(acceptor);
        message.extend_from_slice(&sender.to_le_bytes());
        [&self.secret, &self.previous]
            .into_iter()
            .flatten()
            .any(|key| hmac::verify(key, &message, proof).is_ok())
    }
}

#[derive(Debug)]
struct Hello {
    auth: bool,
    replica_id: u64,
    cluster: u64,
    nonce: [u8; 32],
}

impl Hello {
    /// This side's hello for a new connection.
    fn fresh(me: u64, credentials: &Credentials) -> Hello {
        Hello {
            auth: credentials.secret.is_some(),
            replica_id: me,
            cluster: credentials.cluster,
            nonce: rand::random(),
        }
    }

    fn encode(&self) -> [u8; HELLO_LENGTH] {
        let mut bytes = [0u8; HELLO_LENGTH];
        bytes[..8].copy_from_slice(MAGIC);
        bytes[8..10].copy_from_slice(&VERSION.to_le_bytes());
        bytes[10] = u8::from(self.auth);
        bytes[11..19].copy_from_slice(&self.replica_id.to_le_bytes());
        bytes[19..27].copy_from_slice(&self.cluster.to_le_bytes());
        bytes[27..].copy_from_slice(&self.nonce);
        bytes
    }

    fn decode(bytes: &[u8; HELLO_LENGTH]) -> io::Result<Hello> {
        if &bytes[..8] != MAGIC {
            return Err(refused("not a rill replica"));
        }
        let version = u16::from_le_bytes([bytes[8], bytes[9]]);
        if version != VERSION {
            return Err(refused(&format!(
                "replica protocol version {version}, this node speaks {VERSION}"
            )));
        }
        Ok(Hello {
            auth: bytes[10] == 1,
            replica_id: u64::from_le_bytes(bytes[11..19].try_into().expect("8 bytes")),
            cluster: u64::from_le_bytes(bytes[19..27].try_into().expect("8 bytes")),
            nonce: bytes[27..].try_into().expect("32 bytes"),
        })
    }
}

fn refused(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, why.to_string())
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    mine: &Hello,
    credentials: &Credentials,
) -> io::Result<Hello> {
    stream.write_all(&mine.encode()).await?;
    let mut bytes = [0u8; HELLO_LENGTH];
    stream.read_exact(&mut bytes).await?;
    let theirs = Hello::decode(&bytes)?;
    if theirs.cluster != credentials.cluster {
        return Err(refused(
            "the peer belongs to another cluster (cluster.name differs)",
        ));
    }
    if theirs.auth != mine.auth {
        return Err(refused(
            "cluster.auth.enabled differs between this node and the peer",
        ));
    }
    Ok(theirs)
}

/// The dialer's side: returns once the acceptor `expected` has proven itself.
pub async fn dial<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    me: u64,
    expected: u64,
    credentials: &Credentials,
) -> io::Result<()> {
    let mine = Hello::fresh(me, credentials);
    let theirs = exchange(stream, &mine, credentials).await?;
    if theirs.replica_id != expected {
        return Err(refused(&format!(
            "expected replica {expected}, the peer is replica {}",
            theirs.replica_id
        )));
    }
    if let Some(key) = &credentials.secret {
        let proof = Credentials::proof(key, &mine.nonce, &theirs.nonce, me);
        stream.write_all(&proof).await?;
        let mut answer = [0u8; 32];
        stream.read_exact(&mut answer).await?;
        if !credentials.verify(&answer, &mine.nonce, &theirs.nonce, expected) {
            return Err(refused(
                "the peer does not know the cluster's shared secret",
            ));
        }
    }
    Ok(())
}

/// The acceptor's side: returns the dialer's replica id once it has proven itself and is one
/// of `roster`.
pub async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    me: u64,
    roster: &[u64],
    credentials: &Credentials,
) -> io::Result<u64> {
    let mine = Hello::fresh(me, credentials);
    let theirs = exchange(stream, &mine, credentials).await?;
    if theirs.replica_id == me || !roster.contains(&theirs.replica_id) {
        return Err(refused(&format!(
            "replica {} is not a peer in the roster",
            theirs.replica_id
        )));
    }
    if let Some(key) = &credentials.secret {
        let mut proof = [0u8; 32];
        stream.read_exact(&mut proof).await?;
        if !credentials.verify(&proof, &theirs.nonce, &mine.nonce, theirs.replica_id) {
            return Err(refused(
                "the peer does not know the cluster's shared secret",
            ));
        }
        let answer = Credentials::proof(key, &theirs.nonce, &mine.nonce, me);
        stream.write_all(&answer).await?;
    }
    Ok(theirs.replica_id)
}

/// Writes one frame: `[length u32][tag u8][body]`.
pub async fn write_frame<S: AsyncWrite + Unpin>(
    stream: &mut S,
    tag: u8,
    body: &[u8],
) -> io::Result<()> {
    let length = u32::try_from(body.len() + 1)
        .ok()
        .filter(|length| *length <= MAX_FRAME)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "replica frame too large"))?;
    let mut head = [0u8; 5];
    head[..4].copy_from_slice(&length.to_le_bytes());
    head[4] = tag;
    stream.write_all(&head).await?;
    stream.write_all(body).await?;
    stream.flush().await
}

/// Reads one frame; `None` when the peer closed the connection between frames.
pub async fn read_frame<S: AsyncRead + Unpin>(stream: &mut S) -> io::Result<Option<(u8, Vec<u8>)>> {
    let mut length = [0u8; 4];
    match stream.read_exact(&mut length).await {
        Ok(_) => {}
        Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(error),
    }
    let length = u32::from_le_bytes(length);
    if length == 0 || length > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("replica frame of {length} bytes"),
        ));
    }
    let mut tag = [0u8; 1];
    stream.read_exact(&mut tag).await?;
    let mut body = vec![0u8; length as usize - 1];
    stream.read_exact(&mut body).await?;
    Ok(Some((tag[0], body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (tokio::io::DuplexStream, tokio::io::DuplexStream) {
        tokio::io::duplex(4096)
    }

    async fn run(
        dialer: Credentials,
        acceptor: Credentials,
        roster: &[u64],
    ) -> (io::Result<()>, io::Result<u64>) {
        let (mut a, mut b) = pair();
        let roster = roster.to_vec();
        let accepting = tokio::spawn(async move { accept(&mut b, 2, &roster, &acceptor).await });
        let dialed = dial(&mut a, 1, 2, &dialer).await;
        drop(a);
        (dialed, accepting.await.unwrap())
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn peers_with_the_secret_are_admitted() {
        runtime().block_on(async {
            let credentials = Credentials::new("c", Some(SECRET), None);
            let (dialed, accepted) = run(credentials.clone(), credentials, &[1, 2]).await;
            dialed.unwrap();
            assert_eq!(accepted.unwrap(), 1);
        });
    }

    #[test]
    fn a_wrong_secret_a_stranger_or_another_cluster_is_refused() {
        runtime().block_on(async {
            let good = Credentials::new("c", Some(SECRET), None);
            let wrong = Credentials::new("c", Some("another secret of at least 32 bytes!"), None);
            let (dialed, accepted) = run(wrong, good.clone(), &[1, 2]).await;
            assert!(accepted.is_err() && dialed.is_err());
            let (_, accepted) = run(good.clone(), good.clone(), &[2, 3]).await;
            assert!(accepted.is_err(), "replica 1 is not in this roster");
            let other = Credentials::new("d", Some(SECRET), None);
            let (_, accepted) = run(other, good.clone(), &[1, 2]).await;
            assert!(accepted.is_err());
            let open = Credentials::new("c", None, None);
            let (_, accepted) = run(open, good, &[1, 2]).await;
            assert!(accepted.is_err(), "auth on one side only");
        });
    }

    #[test]
    fn the_previous_secret_is_accepted_during_a_rotation() {
        runtime().block_on(async {
            let old = Credentials::new("c", Some(SECRET), None);
            let rotating = Credentials::new(
                "c",
                Some("the new secret, also at least 32 bytes"),
                Some(SECRET),
            );
            let (_, accepted) = run(old, rotating, &[1, 2]).await;
            assert_eq!(accepted.unwrap(), 1);
        });
    }

    #[test]
    fn frames_round_trip_and_lying_lengths_are_refused() {
        runtime().block_on(async {
            let (mut a, mut b) = pair();
            write_frame(&mut a, 7, b"hello").await.unwrap();
            assert_eq!(
                read_frame(&mut b).await.unwrap(),
                Some((7, b"hello".to_vec()))
            );
            a.write_all(&(MAX_FRAME + 1).to_le_bytes()).await.unwrap();
            assert!(read_frame(&mut b).await.is_err());
            drop(a);
            let (a, mut b) = pair();
            drop(a);
            assert_eq!(read_frame(&mut b).await.unwrap(), None);
        });
    }
}
