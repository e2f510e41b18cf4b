//! A replicated partition's leader epochs: which leader term wrote which offsets, kept beside
//! the log (Kafka's leader-epoch checkpoint, Raft's log terms). Two replicas' logs hold the same
//! messages up to the first offset where their epochs differ, because within one epoch only
//! one leader appends and everyone else copies it; so comparing the short epoch lists tells a
//! replica where its log parts from the leader's without comparing messages.
//!
//! ```text
//! <partition dir>/epochs   generation u64 | count u32 | count × (epoch u64 | start offset u64),
//!                          little-endian, then XXH3-64 of all that; replaced atomically
//! ```
//!
//! `generation` counts purges: a purge restarts the log at offset 0, so messages of an older
//! generation share nothing with a newer one whatever their epochs say.

/// The epochs of one replica's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Epochs {
    pub generation: u64,
    /// (epoch, first offset it wrote), epochs and offsets increasing.
    pub starts: Vec<(u64, u64)>,
}

/// Kept epochs: more than any real history holds, so a hostile peer cannot make us allocate.
pub const MAX_EPOCHS: usize = 4096;

impl Epochs {
    /// The epoch of the last one started (0: none).
    pub fn last(&self) -> u64 {
        self.starts.last().map_or(0, |&(epoch, _)| epoch)
    }

    /// The epoch that wrote `offset` (0: before any recorded epoch).
    fn at(&self, offset: u64) -> u64 {
        self.starts
            .iter()
            .take_while(|&&(_, start)| start <= offset)
            .last()
            .map_or(0, |&(epoch, _)| epoch)
    }

    /// Where two logs part: every offset below the returned one holds the same message in a
    /// log ending at `end` with these epochs and in one ending at `other_end` with `other`'s.
    pub fn common_end(&self, end: u64, other: &Epochs, other_end: u64) -> u64 {
        if self.generation != other.generation {
            return 0;
        }
        let limit = end.min(other_end);
        let boundaries = self.starts.iter().chain(&other.starts);
        let mut candidates: Vec<u64> = std::iter::once(0)
            .chain(boundaries.map(|&(_, start)| start))
            .filter(|&offset| offset < limit)
            .collect();
        candidates.sort_unstable();
        candidates
            .into_iter()
            .find(|&offset| self.at(offset) != other.at(offset))
            .unwrap_or(limit)
    }

    /// Records that `epoch` writes from `start` on (a leader taking over at its log's end).
    /// An epoch already recorded, or an older one, changes nothing.
    pub fn begin(&mut self, epoch: u64, start: u64) -> bool {
        if epoch <= self.last() {
            return false;
        }
        self.cut(start);
        self.starts.push((epoch, start));
        self.starts.truncate(MAX_EPOCHS);
        true
    }

    /// Takes the leader's epochs for a log that now holds the leader's messages below `end`.
    /// Returns whether anything changed.
    pub fn adopt(&mut self, leader: &Epochs, end: u64) -> bool {
        let adopted = Epochs {
            generation: leader.generation,
            starts: leader
                .starts
                .iter()
                .copied()
                .filter(|&(_, start)| start <= end)
                .collect(),
        };
        let changed = *self != adopted;
        *self = adopted;
        changed
    }

    /// Drops the epochs that start at or after `end` (the log was cut there).
    pub fn cut(&mut self, end: u64) {
        self.starts.retain(|&(_, start)| start < end);
    }

    /// Restarts the history for a purged log, which `epoch` writes from offset 0.
    pub fn purge(&mut self, epoch: u64) {
        self.generation += 1;
        self.starts = if epoch > 0 {
            vec![(epoch, 0)]
        } else {
            Vec::new()
        };
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        let from = out.len();
        out.extend_from_slice(&self.generation.to_le_bytes());
        out.extend_from_slice(&(self.starts.len() as u32).to_le_bytes());
        for &(epoch, start) in &self.starts {
            out.extend_from_slice(&epoch.to_le_bytes());
            out.extend_from_slice(&start.to_le_bytes());
        }
        let checksum = xxhash_rust::xxh3::xxh3_64(&out[from..]);
        out.extend_from_slice(&checksum.to_le_bytes());
    }

    /// Decodes epochs from the front of `bytes`; returns them and the bytes they took, or None
    /// for anything short, damaged, unordered or too long.
    pub fn decode(bytes: &[u8]) -> Option<(Epochs, usize)> {
        let generation = u64::from_le_bytes(bytes.get(0..8)?.try_into().ok()?);
        let count = u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?) as usize;
        if count > MAX_EPOCHS {
            return None;
        }
        let body_end = 12 + count * 16;
        let body = bytes.get(..body_end)?;
        let checksum = u64::from_le_bytes(bytes.get(body_end..body_end + 8)?.try_into().ok()?);
        if xxhash_rust::xxh3::xxh3_64(body) != checksum {
            return None;
        }
        let starts: Vec<(u64, u64)> = body[12..]
            .chunks_exact(16)
            .map(|pair| {
                (
                    u64::from_le_bytes(pair[..8].try_into().expect("8 bytes")),
                    u64::from_le_bytes(pair[8..].try_into().expect("8 bytes")),
                )
            })
            .collect();
        let ordered = starts
            .windows(2)
            .all(|pair| pair[0].0 < pair[1].0 && pair[0].1 <= pair[1].1);
        ordered.then_some((Epochs { generation, starts }, body_end + 8))
    }
}

/// Any well-formed epochs, for property tests (here and of the codecs that carry them).
#[cfg(test)]
pub fn arbitrary() -> impl proptest::strategy::Strategy<Value = Epochs> {
    use proptest::prelude::*;
    (0u64..3, proptest::collection::vec((1u64..4, 0u64..5), 0..6)).prop_map(
        |(generation, steps)| {
            let (mut epoch, mut start) = (0, 0);
            let starts = steps
                .into_iter()
                .map(|(de, ds)| {
                    epoch += de;
                    start += ds;
                    (epoch, start)
                })
                .collect();
            Epochs { generation, starts }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn epochs(starts: &[(u64, u64)]) -> Epochs {
        Epochs {
            generation: 0,
            starts: starts.to_vec(),
        }
    }

    #[test]
    fn logs_part_where_their_epochs_differ() {
        let leader = epochs(&[(1, 0), (2, 4), (4, 8)]);
        // Same epochs, shorter: shares all of itself.
        assert_eq!(epochs(&[(1, 0), (2, 4)]).common_end(6, &leader, 12), 6);
        // Epoch 1 ran on past offset 4 here, while the leader's offset 4 is epoch 2's.
        assert_eq!(epochs(&[(1, 0), (3, 5)]).common_end(9, &leader, 12), 4);
        // An epoch the leader never saw, started at the leader's end of epoch 2.
        assert_eq!(
            epochs(&[(1, 0), (2, 4), (3, 8)]).common_end(9, &leader, 12),
            8
        );
        // Longer than the leader with the same epochs: the extra tail is not shared.
        assert_eq!(leader.common_end(20, &leader, 12), 12);
        // Another generation shares nothing.
        let mut purged = leader.clone();
        purged.purge(5);
        assert_eq!(purged.common_end(3, &leader, 12), 0);
        // No epochs on either side (a log from before the cluster): the shorter prefix.
        assert_eq!(Epochs::default().common_end(3, &Epochs::default(), 7), 3);
    }

    #[test]
    fn begin_adopt_and_cut_keep_the_history_ordered() {
        let mut mine = epochs(&[(1, 0), (3, 5)]);
        assert!(!mine.begin(3, 9), "an epoch already started");
        assert!(mine.begin(6, 9));
        assert_eq!(mine.starts, [(1, 0), (3, 5), (6, 9)]);
        mine.cut(5);
        assert_eq!(mine.starts, [(1, 0)]);
        let leader = epochs(&[(1, 0), (2, 4), (4, 8)]);
        assert!(mine.adopt(&leader, 6));
        assert_eq!(mine.starts, [(1, 0), (2, 4)]);
        assert!(!mine.adopt(&leader, 7));
        assert!(
            mine.adopt(&leader, 8),
            "an epoch starting at the end is taken"
        );
        assert_eq!(mine.last(), 4);
    }

    proptest! {
        #[test]
        fn encoding_round_trips_and_damage_is_refused(
            epochs in arbitrary(),
            flip in any::<prop::sample::Index>(),
        ) {
            let mut bytes = Vec::new();
            epochs.encode(&mut bytes);
            prop_assert_eq!(Epochs::decode(&bytes), Some((epochs.clone(), bytes.len())));
            let at = flip.index(bytes.len());
            bytes[at] ^= 0x40;
            prop_assert_ne!(Epochs::decode(&bytes).map(|(decoded, _)| decoded), Some(epochs));
        }

        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Epochs::decode(&bytes);
        }

        #[test]
        fn the_common_end_is_symmetric_and_within_both_logs(
            a in arbitrary(), b in arbitrary(), end_a in 0u64..30, end_b in 0u64..30,
        ) {
            let common = a.common_end(end_a, &b, end_b);
            prop_assert_eq!(common, b.common_end(end_b, &a, end_a));
            prop_assert!(common <= end_a.min(end_b));
            if a.generation == b.generation {
                for offset in 0..common {
                    prop_assert_eq!(a.at(offset), b.at(offset));
                }
            }
        }
    }
}
