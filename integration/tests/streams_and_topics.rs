//! Metadata commands end to end with the official SDK: create/get/list/update/delete of streams
//! and topics, create/delete of partitions, the ids the server assigns, the resolved topic
//! settings it reports, and the error codes for duplicates and unknown resources.

use iggy::prelude::*;
use rill_integration::fixtures::test_messages;
use rill_integration::sdk::{
    assert_error_code, consumer, create_stream, create_topic, id, named, root_client,
};
use rill_integration::{ServerOptions, TestServer};
use std::time::Duration;

#[tokio::test]
async fn stream_lifecycle_assigns_ids_and_reports_errors() {
    // Proves: streams get 0-based ids in creation order, can be read by id and by name, renamed
    // and deleted; a freed id is reused by the next stream (lowest free slot); duplicate names
    // answer 1012 and unknown streams 1009 (GetStream answers "not found", i.e. None).
    // How: one official client walks through the whole lifecycle.
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;

    let alpha = client.create_stream("alpha").await.expect("create alpha");
    assert_eq!((alpha.id, alpha.name.as_str()), (0, "alpha"));
    assert_eq!(alpha.topics_count, 0);
    assert_eq!(alpha.messages_count, 0);
    assert!(alpha.topics.is_empty());
    let beta = client.create_stream("beta").await.expect("create beta");
    assert_eq!(beta.id, 1);
    assert!(beta.created_at.as_micros() >= alpha.created_at.as_micros());

    let streams = client.get_streams().await.expect("get_streams");
    let listed: Vec<(u32, &str)> = streams.iter().map(|s| (s.id, s.name.as_str())).collect();
    assert_eq!(listed, [(0, "alpha"), (1, "beta")], "streams sorted by id");

    let by_name = client
        .get_stream(&named("beta"))
        .await
        .expect("get by name")
        .expect("beta exists");
    assert_eq!(by_name.id, 1);
    let by_id = client
        .get_stream(&id(0))
        .await
        .expect("get by id")
        .expect("alpha exists");
    assert_eq!(by_id.name, "alpha");
    assert_eq!(by_id.created_at, alpha.created_at);

    assert_error_code(
        client.create_stream("alpha").await,
        1012,
        "duplicate stream name",
    );

    client
        .update_stream(&id(1), "gamma")
        .await
        .expect("rename beta to gamma");
    assert!(client.get_stream(&named("beta")).await.unwrap().is_none());
    let gamma = client
        .get_stream(&named("gamma"))
        .await
        .unwrap()
        .expect("gamma exists");
    assert_eq!(gamma.id, 1);
    assert_error_code(
        client.update_stream(&id(0), "gamma").await,
        1012,
        "rename onto an existing name",
    );
    assert_error_code(
        client.update_stream(&id(42), "whatever").await,
        1009,
        "update unknown stream",
    );

    assert!(client.get_stream(&id(42)).await.unwrap().is_none());
    assert!(client.get_stream(&named("nope")).await.unwrap().is_none());
    assert_error_code(
        client.delete_stream(&id(42)).await,
        1009,
        "delete unknown stream",
    );
    assert_error_code(
        client.purge_stream(&id(42)).await,
        1009,
        "purge unknown stream",
    );
    assert_error_code(
        client.delete_stream(&named("nope")).await,
        1009,
        "delete unknown stream by name",
    );

    client.delete_stream(&id(0)).await.expect("delete alpha");
    assert!(client.get_stream(&id(0)).await.unwrap().is_none());
    assert_error_code(
        client.delete_stream(&id(0)).await,
        1009,
        "delete a deleted stream",
    );
    let streams = client.get_streams().await.unwrap();
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0].name, "gamma");

    let delta = client.create_stream("delta").await.expect("create delta");
    assert_eq!(delta.id, 0, "the lowest free id is reused");
    let alpha_again = client
        .create_stream("alpha")
        .await
        .expect("name is free again");
    assert_eq!(alpha_again.id, 2);
}

#[tokio::test]
async fn topic_lifecycle_reports_resolved_settings_and_errors() {
    // Proves: topics get 0-based ids per stream and partitions 0..n; CreateTopic answers the
    // resolved settings (explicit ones as given, server defaults resolved to "never expire" and
    // "unlimited", replication 1); GetTopic/GetTopics/GetStream agree; UpdateTopic changes name
    // and settings; errors: duplicate name 2013, unknown stream 1009, unknown topic 2010,
    // more than 1000 partitions 2015. How: one official client.
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let stream = create_stream(&client, "shop").await;
    let other_stream = create_stream(&client, "other").await;

    let one_hour = IggyExpiry::ExpireDuration(IggyDuration::from(Duration::from_secs(3600)));
    let two_gib = MaxTopicSize::Custom(IggyByteSize::from(2u64 << 30));
    let orders = client
        .create_topic(
            &id(stream),
            "orders",
            3,
            CompressionAlgorithm::Gzip,
            None,
            one_hour,
            two_gib,
        )
        .await
        .expect("create orders");
    assert_eq!(orders.id, 0);
    assert_eq!(orders.name, "orders");
    assert_eq!(orders.partitions_count, 3);
    assert_eq!(orders.compression_algorithm, CompressionAlgorithm::Gzip);
    assert_eq!(orders.message_expiry, one_hour);
    assert_eq!(orders.max_topic_size, two_gib);
    assert_eq!(
        orders.replication_factor, 1,
        "replication 0/None is stored as 1"
    );
    assert_eq!(orders.messages_count, 0);
    assert_eq!(orders.size, 0);
    let partition_ids: Vec<u32> = orders.partitions.iter().map(|p| p.id).collect();
    assert_eq!(partition_ids, [0, 1, 2]);
    for partition in &orders.partitions {
        assert_eq!(partition.current_offset, 0);
        assert_eq!(partition.messages_count, 0);
        assert_eq!(partition.size, 0);
    }

    let defaults = create_topic(&client, stream, "defaults", 1).await;
    assert_eq!(defaults.id, 1);
    assert_eq!(defaults.message_expiry, IggyExpiry::NeverExpire);
    assert_eq!(defaults.max_topic_size, MaxTopicSize::Unlimited);
    assert_eq!(defaults.compression_algorithm, CompressionAlgorithm::None);
    assert_eq!(defaults.replication_factor, 1);
    let first_in_other = create_topic(&client, other_stream, "orders", 2).await;
    assert_eq!(first_in_other.id, 0, "topic ids are per stream; names too");

    let topics = client.get_topics(&id(stream)).await.expect("get_topics");
    let listed: Vec<(u32, &str, u32)> = topics
        .iter()
        .map(|t| (t.id, t.name.as_str(), t.partitions_count))
        .collect();
    assert_eq!(listed, [(0, "orders", 3), (1, "defaults", 1)]);
    let stream_details = client
        .get_stream(&id(stream))
        .await
        .unwrap()
        .expect("stream");
    assert_eq!(stream_details.topics_count, 2);
    assert_eq!(stream_details.topics.len(), 2);
    let fetched = client
        .get_topic(&named("shop"), &named("orders"))
        .await
        .expect("get_topic by names")
        .expect("orders exists");
    assert_eq!(fetched.id, 0);
    assert_eq!(fetched.created_at, orders.created_at);
    assert_eq!(fetched.message_expiry, one_hour);
    assert_eq!(fetched.max_topic_size, two_gib);
    assert_eq!(fetched.compression_algorithm, CompressionAlgorithm::Gzip);
    assert_eq!(fetched.partitions.len(), 3);

    assert_error_code(
        client
            .create_topic(
                &id(stream),
                "orders",
                1,
                CompressionAlgorithm::None,
                None,
                IggyExpiry::ServerDefault,
                MaxTopicSize::ServerDefault,
            )
            .await,
        2013,
        "duplicate topic name",
    );
    assert_error_code(
        client
            .create_topic(
                &id(77),
                "orphan",
                1,
                CompressionAlgorithm::None,
                None,
                IggyExpiry::ServerDefault,
                MaxTopicSize::ServerDefault,
            )
            .await,
        1009,
        "topic in an unknown stream",
    );
    assert_error_code(
        client
            .create_topic(
                &id(stream),
                "huge",
                1001,
                CompressionAlgorithm::None,
                None,
                IggyExpiry::ServerDefault,
                MaxTopicSize::ServerDefault,
            )
            .await,
        2015,
        "more than 1000 partitions",
    );
    assert!(
        client
            .get_topic(&id(stream), &id(9))
            .await
            .unwrap()
            .is_none()
    );
    assert!(client.get_topic(&id(77), &id(0)).await.unwrap().is_none());
    assert!(client.get_topics(&id(77)).await.unwrap().is_empty());

    client
        .update_topic(
            &id(stream),
            &id(0),
            "orders-v2",
            CompressionAlgorithm::None,
            None,
            IggyExpiry::NeverExpire,
            MaxTopicSize::Unlimited,
        )
        .await
        .expect("update orders");
    let updated = client
        .get_topic(&id(stream), &named("orders-v2"))
        .await
        .unwrap()
        .expect("renamed topic");
    assert_eq!(updated.id, 0);
    assert_eq!(updated.compression_algorithm, CompressionAlgorithm::None);
    assert_eq!(updated.message_expiry, IggyExpiry::NeverExpire);
    assert_eq!(updated.max_topic_size, MaxTopicSize::Unlimited);
    assert_eq!(updated.partitions_count, 3, "update keeps partitions");
    assert!(
        client
            .get_topic(&id(stream), &named("orders"))
            .await
            .unwrap()
            .is_none()
    );
    assert_error_code(
        client
            .update_topic(
                &id(stream),
                &id(9),
                "x",
                CompressionAlgorithm::None,
                None,
                IggyExpiry::NeverExpire,
                MaxTopicSize::Unlimited,
            )
            .await,
        2010,
        "update unknown topic",
    );
    assert_error_code(
        client
            .update_topic(
                &id(stream),
                &id(1),
                "orders-v2",
                CompressionAlgorithm::None,
                None,
                IggyExpiry::NeverExpire,
                MaxTopicSize::Unlimited,
            )
            .await,
        2013,
        "rename onto an existing topic name",
    );

    client
        .delete_topic(&id(stream), &id(0))
        .await
        .expect("delete topic 0");
    assert!(
        client
            .get_topic(&id(stream), &id(0))
            .await
            .unwrap()
            .is_none()
    );
    assert_error_code(
        client.delete_topic(&id(stream), &id(0)).await,
        2010,
        "delete a deleted topic",
    );
    assert_error_code(
        client.delete_topic(&id(77), &id(0)).await,
        1009,
        "delete topic in unknown stream",
    );
    assert_error_code(
        client.purge_topic(&id(stream), &id(9)).await,
        2010,
        "purge unknown topic",
    );
    let stream_details = client
        .get_stream(&id(stream))
        .await
        .unwrap()
        .expect("stream");
    assert_eq!(stream_details.topics_count, 1);

    // Deleting a stream deletes its topics.
    client
        .delete_stream(&id(other_stream))
        .await
        .expect("delete other");
    assert!(
        client
            .get_topic(&id(other_stream), &id(0))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn partitions_can_be_added_and_removed() {
    // Proves: CreatePartitions appends partitions with the next ids, which accept and return
    // messages; DeletePartitions removes the last ones, after which sending to or polling them
    // answers 3007 (PartitionNotFound). How: official client on a 2-partition topic.
    let server = TestServer::start(ServerOptions::new());
    let client = root_client(&server).await;
    let stream = create_stream(&client, "parts").await;
    create_topic(&client, stream, "t", 2).await;
    let (s, t) = (id(stream), id(0));

    client
        .create_partitions(&s, &t, 3)
        .await
        .expect("add 3 partitions");
    let topic = client.get_topic(&s, &t).await.unwrap().expect("topic");
    assert_eq!(topic.partitions_count, 5);
    let ids: Vec<u32> = topic.partitions.iter().map(|p| p.id).collect();
    assert_eq!(ids, [0, 1, 2, 3, 4]);

    let mut messages = test_messages(1, 0, 10);
    client
        .send_messages(&s, &t, &Partitioning::partition_id(4), &mut messages)
        .await
        .expect("send to new partition 4");
    let polled = client
        .poll_messages(
            &s,
            &t,
            Some(4),
            &consumer(1),
            &PollingStrategy::first(),
            100,
            false,
        )
        .await
        .expect("poll partition 4");
    assert_eq!(polled.messages.len(), 10);
    assert_eq!(polled.partition_id, 4);

    client
        .delete_partitions(&s, &t, 2)
        .await
        .expect("delete 2 partitions");
    let topic = client.get_topic(&s, &t).await.unwrap().expect("topic");
    assert_eq!(topic.partitions_count, 3);
    let ids: Vec<u32> = topic.partitions.iter().map(|p| p.id).collect();
    assert_eq!(ids, [0, 1, 2]);
    assert_eq!(
        topic.messages_count, 0,
        "the messages of partition 4 went with it"
    );

    let mut messages = test_messages(1, 10, 1);
    assert_error_code(
        client
            .send_messages(&s, &t, &Partitioning::partition_id(4), &mut messages)
            .await,
        3007,
        "send to a deleted partition",
    );
    let mut messages = test_messages(1, 11, 1);
    assert_error_code(
        client
            .send_messages(&s, &t, &Partitioning::partition_id(100), &mut messages)
            .await,
        3007,
        "send to a partition that never existed",
    );
    assert_error_code(
        client
            .poll_messages(
                &s,
                &t,
                Some(4),
                &consumer(1),
                &PollingStrategy::first(),
                10,
                false,
            )
            .await,
        3007,
        "poll a deleted partition",
    );
    assert_error_code(
        client.create_partitions(&s, &t, 1001).await,
        2015,
        "add more than 1000 partitions",
    );
    assert_error_code(
        client.create_partitions(&s, &id(5), 1).await,
        2010,
        "add partitions to an unknown topic",
    );

    // Re-adding partitions gives fresh, empty partitions with the freed ids.
    client.create_partitions(&s, &t, 2).await.expect("re-add");
    let topic = client.get_topic(&s, &t).await.unwrap().expect("topic");
    assert_eq!(topic.partitions_count, 5);
    let partition_4 = &topic.partitions[4];
    assert_eq!(partition_4.id, 4);
    assert_eq!(partition_4.messages_count, 0);
    assert_eq!(partition_4.current_offset, 0);
}
