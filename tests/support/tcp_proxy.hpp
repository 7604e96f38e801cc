// A TCP forwarder on 127.0.0.1 in front of a real server (a shard), for fault tests: it passes
// bytes both ways until freeze(); then it keeps every connection open, accepts new ones and moves
// nothing, like a stalled server or a black hole (connects hang in the handshake, statements in
// flight never answer), until thaw(). With trickle(n), each connection accepted from then on gets
// only the server's first n bytes and then nothing more, ever (a server that answers a few bytes
// and stops); trickle(0) ends that for new connections. One thread of its own; the methods are
// thread-safe. Tests only.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace cairn::test {

class tcp_proxy {
public:
    tcp_proxy(std::string target_host, std::uint16_t target_port);
    ~tcp_proxy();  // Closes every connection.
    tcp_proxy(const tcp_proxy&) = delete;
    tcp_proxy& operator=(const tcp_proxy&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    void freeze() noexcept { frozen_ = true; }
    void thaw() noexcept { frozen_ = false; }
    bool frozen() const noexcept { return frozen_; }
    void trickle(std::size_t bytes) noexcept { trickle_ = bytes; }
    // Closes every connection now (as a restarted server would); new ones are accepted as before.
    void drop_all() noexcept { drop_ = true; }
    // Connections accepted so far.
    std::uint64_t accepted() const noexcept { return accepted_; }
    // Connections accepted from now on go to this port of the same host (an address that moves to
    // another server, as after a failover); those already open stay where they are.
    void retarget(std::uint16_t target_port) noexcept { target_port_ = target_port; }

private:
    void run();

    std::string host_;
    std::atomic<std::uint16_t> target_port_;
    int listen_fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> frozen_{false};
    std::atomic<std::size_t> trickle_{0};
    std::atomic<bool> drop_{false};
    std::atomic<bool> stop_{false};
    std::atomic<std::uint64_t> accepted_{0};
    std::thread thread_;
};

}  // namespace cairn::test
