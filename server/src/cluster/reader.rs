//! A cursor over a replica-port body (replication and partition calls): little-endian reads
//! that fail cleanly, as None, on a short body.

use crate::shard::table::PartitionKey;

pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    pub fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_at_checked(N)?;
        self.0 = rest;
        head.try_into().ok()
    }

    pub fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|[byte]| byte)
    }

    pub fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }

    pub fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }

    /// What is left unread.
    pub fn rest(&self) -> &'a [u8] {
        self.0
    }

    pub fn key(&mut self) -> Option<PartitionKey> {
        Some(PartitionKey::new(self.u32()?, self.u32()?, self.u32()?))
    }
}
