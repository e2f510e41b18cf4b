use super::*;

#[test]
fn partition_ops_beyond_the_limit_are_ignored() {
    let mut metadata = Metadata::default();
    let settings = TopicSettings {
        name: "t".into(),
        compression: CompressionAlgorithm::None,
        message_expiry: u64::MAX,
        max_topic_size: u64::MAX,
        replication_factor: 1,
    };
    metadata.apply(&MetadataOp::CreateStream {
        id: 0,
        name: "s".into(),
        created_at: 1,
    });
    metadata.apply(&MetadataOp::CreateTopic {
        stream_id: 0,
        id: 0,
        created_at: 1,
        settings: settings.clone(),
        partitions_count: u32::MAX,
        segment_size: 0,
    });
    assert!(metadata.streams[&0].topics.is_empty());
    metadata.apply(&MetadataOp::CreateTopic {
        stream_id: 0,
        id: 0,
        created_at: 1,
        settings,
        partitions_count: 2,
        segment_size: 0,
    });
    for count in [u32::MAX, u32::MAX - 1, MAX_PARTITIONS_PER_OP + 1] {
        metadata.apply(&MetadataOp::CreatePartitions {
            stream_id: 0,
            topic_id: 0,
            count,
            created_at: 2,
        });
    }
    assert_eq!(metadata.streams[&0].topics[&0].partitions.len(), 2);
    metadata.apply(&MetadataOp::CreatePartitions {
        stream_id: 0,
        topic_id: 0,
        count: MAX_PARTITIONS_PER_OP,
        created_at: 2,
    });
    assert_eq!(metadata.streams[&0].topics[&0].partitions.len(), 1002);
}

#[test]
fn deleting_a_stream_or_topic_removes_every_permission_naming_it() {
    let topic_entry = |topic_id| TopicPermissions {
        topic_id,
        manage_topic: false,
        read_topic: true,
        poll_messages: true,
        send_messages: false,
    };
    let stream_entry = |stream_id, topics| StreamPermissions {
        stream_id,
        manage_stream: false,
        read_stream: true,
        manage_topics: false,
        read_topics: true,
        poll_messages: true,
        send_messages: false,
        topics,
    };
    let mut metadata = Metadata::default();
    metadata.apply(&MetadataOp::CreateUser(User {
        id: 1,
        username: "reader".into(),
        password_hash: String::new(),
        status: UserStatus::Active,
        permissions: Some(Permissions {
            global: rill_core::primitives::GlobalPermissions::none(),
            streams: vec![
                stream_entry(1, vec![topic_entry(0)]),
                stream_entry(2, vec![topic_entry(0), topic_entry(1)]),
            ],
        }),
        created_at: 0,
    }));
    metadata.apply(&MetadataOp::DeleteStream { id: 1 });
    metadata.apply(&MetadataOp::DeleteTopic {
        stream_id: 2,
        id: 0,
    });
    let streams = &metadata.users[&1].permissions.as_ref().unwrap().streams;
    assert_eq!(streams, &vec![stream_entry(2, vec![topic_entry(1)])]);
}

#[test]
fn lowest_free_id_fills_gaps() {
    let mut map = BTreeMap::new();
    assert_eq!(lowest_free_id(&map), Some(0));
    map.insert(0, ());
    map.insert(1, ());
    map.insert(3, ());
    assert_eq!(lowest_free_id(&map), Some(2));
}

#[test]
fn snapshot_ops_rebuild_the_same_state() {
    let mut metadata = Metadata::default();
    let settings = TopicSettings {
        name: "t".into(),
        compression: CompressionAlgorithm::None,
        message_expiry: u64::MAX,
        max_topic_size: u64::MAX,
        replication_factor: 1,
    };
    for op in [
        MetadataOp::CreateStream {
            id: 0,
            name: "s".into(),
            created_at: 1,
        },
        MetadataOp::CreateTopic {
            stream_id: 0,
            id: 0,
            created_at: 2,
            settings,
            partitions_count: 2,
            segment_size: 1 << 20,
        },
        MetadataOp::CreatePartitions {
            stream_id: 0,
            topic_id: 0,
            count: 1,
            created_at: 3,
        },
    ] {
        metadata.apply(&op);
    }
    let mut rebuilt = Metadata::default();
    for op in metadata.to_ops() {
        rebuilt.apply(&op);
    }
    assert_eq!(rebuilt, metadata);
    assert_eq!(rebuilt.streams[&0].topics[&0].partitions.len(), 3);
    assert_eq!(rebuilt.streams[&0].topics[&0].segment_size, 1 << 20);
}
