//! System commands: Ping, stats, snapshot, cluster metadata, clients.

use crate::codec::{Decode, Encode, Reader, wire_struct};
use crate::error::DecodeError;
use bytes::BufMut;

wire_struct! {
    /// Ping (1): liveness check; also refreshes the session's heartbeat.
    pub struct Ping {}
}
wire_struct! {
    /// GetStats (10).
    pub struct GetStats {}
}
wire_struct! {
    /// GetClusterMetadata (12).
    pub struct GetClusterMetadata {}
}
wire_struct! {
    /// GetMe (20): the calling session's client details.
    pub struct GetMe {}
}
wire_struct! {
    /// GetClient (21).
    pub struct GetClient { pub client_id: u32 }
}
wire_struct! {
    /// GetClients (22).
    pub struct GetClients {}
}

/// GetSnapshot (11): `compression u8`, `types_count u8`, `types u8 × count`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetSnapshot {
    /// 1 stored, 2 deflated, 3 bzip2, 4 zstd, 5 lzma, 6 xz.
    pub compression: u8,
    /// 1 filesystem overview, 2 process list, 3 resource usage, 4 test, 5 server logs,
    /// 6 server config, 100 all (alone).
    pub types: Vec<u8>,
}

impl Encode for GetSnapshot {
    fn encode<B: BufMut>(&self, out: &mut B) {
        out.put_u8(self.compression);
        out.put_u8(self.types.len() as u8);
        out.put_slice(&self.types);
    }
    fn encoded_len(&self) -> usize {
        2 + self.types.len()
    }
}

impl Decode for GetSnapshot {
    fn decode(reader: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let compression = reader.u8("snapshot compression")?;
        if !(1..=6).contains(&compression) {
            return Err(DecodeError::invalid("snapshot compression"));
        }
        let count = reader.u8("snapshot types count")? as usize;
        let types = reader.take(count, "snapshot types")?.to_vec();
        if types.iter().any(|kind| !matches!(kind, 1..=6 | 100))
            || (types.contains(&100) && types.len() > 1)
        {
            return Err(DecodeError::invalid("snapshot types"));
        }
        Ok(GetSnapshot { compression, types })
    }
}
