"""Drives a rill server's HTTP REST API with the official Python client apache-iggy 0.9.0
(`HttpConfig`).

Usage: v09_http_client.py HTTP_HOST:PORT STREAM. Logs in, creates STREAM with topic "t" of 2
partitions, sends three messages to partition 1, polls them back as a plain consumer with
auto-commit, reads the stats, logs out; prints one JSON object with what it saw. Any failure
raises.
"""

import asyncio
import json
import os
import sys

import apache_iggy as iggy


async def main(address: str, stream: str) -> None:
    client = iggy.IggyClient(iggy.HttpConfig(api_url=f"http://{address}", retries=0))
    await client.connect()
    await client.login_user("iggy", "iggy")
    await client.ping()
    await client.create_stream(stream)
    await client.create_topic(stream, "t", 2)
    topic = await client.get_topic(stream, "t")
    await client.send_messages(stream, "t", 1, [iggy.SendMessage(f"h1-{i}") for i in range(3)])
    polled = await client.poll_messages(
        stream,
        "t",
        consumer=iggy.Consumer.Single(7),
        partition_id=1,
        polling_strategy=iggy.PollingStrategy.Offset(value=0),
        count=10,
        auto_commit=True,
    )
    stats = await client.get_stats()
    await client.logout_user()
    print(
        json.dumps(
            {
                "partitions": topic.partitions_count,
                "polled": [[m.offset(), m.payload().decode()] for m in polled],
                "messages": stats.messages_count,
            }
        )
    )


asyncio.run(main(sys.argv[1], sys.argv[2]))
# See v09_client.py: the native runtime sometimes aborts at interpreter teardown, after the
# result is printed. The result is what the test checks.
sys.stdout.flush()
os._exit(0)
