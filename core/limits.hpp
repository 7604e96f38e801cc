// Every bound cairn enforces, in one place, with production defaults. Plain values; copy freely.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace cairn::core {

struct limits {
    // HTTP / WebSocket
    std::size_t body_bytes_max = 1024 * 1024;
    std::size_t header_bytes_max = 8 * 1024;
    std::size_t connections_max = 1024;
    std::size_t batch_ops_max = 1000;  // edges in one write request
    std::chrono::milliseconds timeout_read{30'000};
    std::chrono::milliseconds timeout_idle{300'000};
    std::size_t ws_in_flight_max = 256;  // requests of one WebSocket connection running at once

    // Stop (SIGTERM/SIGINT): requests, WebSocket answers and apply batches in flight may finish
    // within stop_drain; then connections are closed and shard statements abandoned (what was
    // acknowledged stays in the journal). Past stop_timeout the process exits anyway (code 4),
    // logging what was still pending.
    std::chrono::milliseconds stop_drain{2'000};
    std::chrono::milliseconds stop_timeout{6'000};

    // Reads
    std::size_t set_scan_rows_max = 100'000;          // rows one page of a set operation may read
    std::size_t page_limit_max = 1000;                 // edges in one page (?limit=)
    std::chrono::milliseconds applied_wait_max{30'000};  // longest ?after= / ?wait=applied wait (?timeout_ms=)
    // A read without ?after= may be served by a shard's replica ([[shards.replicas]]) whose data is
    // at most this old (measured by a heartbeat, docs/operations.md); 0: never from a replica.
    std::chrono::milliseconds replica_staleness_max{1'000};

    // Online resharding (docs/resharding.md): the split's copy and clean read at most this many rows
    // of the old owner per second; 0: as fast as the shards go.
    std::uint64_t split_copy_rows_per_second_max = 0;

    // Journal
    std::size_t journal_queue_ops_max = 100'000;      // ops waiting for the writer
    std::size_t journal_group_ops_max = 10'000;       // ops committed in one transaction
    std::chrono::milliseconds journal_wait_max{2'000};  // how long a write waits for queue room
    std::uint64_t journal_unapplied_ops_max = 50'000'000;  // backpressure: 503 beyond this
    // The node id lease on shard 0 (docs/operations.md) lapses this long after its last renewal;
    // it is renewed every third of it.
    std::chrono::seconds node_lease_ttl{15};

    // Apply
    // Ops applied in one transaction per shard. A backlog drains fastest with large batches
    // (rows/s by cairn-bench's drain: 1,000 ops 57k, 2,000 63k, 5,000 71k, 10,000 71k on 2 cores);
    // the bytes cap keeps a batch's statements far below the shards' max_allowed_packet (16 MiB).
    std::size_t apply_batch_ops_max = 5000;
    std::size_t apply_batch_bytes_max = 4 << 20;
    // While a shard keeps getting new ops, its worker starts a batch at most this often (0: as soon
    // as ops arrive): what arrives meanwhile waits in the journal for the next, larger batch. Each
    // batch is a transaction on the shard; one per journal commit took the shards' CPU that the
    // acknowledgements needed (docs/design.md, "Applying"; the README has the measurement). Not
    // paced: a batch with a full batch or more journaled behind it (a backlog), and a reader
    // waiting for an op already journaled (shards/apply_worker.hpp, async_pace).
    std::chrono::milliseconds apply_batch_interval{50};
    std::chrono::milliseconds query_timeout{10'000};
    std::chrono::milliseconds connect_timeout{3'000};
    std::uint32_t retry_attempts_max = 8;
    std::chrono::milliseconds retry_backoff_initial{200};
    std::chrono::milliseconds retry_backoff_max{60'000};
    std::chrono::milliseconds outage_backoff_max{5'000};
    std::size_t read_pool_connections = 8;
    std::size_t get_batch_keys_max = 100;  // point reads combined into one statement (1: never combined)
    // Combined point-read queries in flight per shard; a read arriving while that many are out waits
    // and goes with the next. 1 combines the most (measured: docs/config.md); at most read_pool_connections.
    std::size_t get_batch_runners = 1;

    // Small values that make every limit reachable in tests.
    static limits for_test() {
        limits l;
        l.body_bytes_max = 64 * 1024;
        l.batch_ops_max = 100;
        l.page_limit_max = 50;
        l.applied_wait_max = std::chrono::milliseconds(2'000);
        l.journal_queue_ops_max = 1000;
        l.retry_attempts_max = 3;
        l.retry_backoff_initial = std::chrono::milliseconds(20);
        l.retry_backoff_max = std::chrono::milliseconds(200);
        l.outage_backoff_max = std::chrono::milliseconds(500);
        l.query_timeout = std::chrono::milliseconds(5'000);
        return l;
    }
};

}  // namespace cairn::core
