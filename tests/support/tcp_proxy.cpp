#include "tests/support/tcp_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cerrno>
#include <stdexcept>
#include <vector>

namespace cairn::test {

namespace {

// Writes all of data to fd (blocking); false if the peer is gone.
bool send_all(int fd, const char* data, std::size_t n) {
    while (n > 0) {
        const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        data += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

// Every socket is close-on-exec: a cairnd the test spawns must not inherit a copy, or a connection
// the proxy closes would stay open on the server (with its transaction's locks) while that cairnd lives.
int connect_to(const std::string& host, std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return -1;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

}  // namespace

tcp_proxy::tcp_proxy(std::string target_host, std::uint16_t target_port)
    : host_(std::move(target_host)), target_port_(target_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 128) != 0) {
        ::close(listen_fd_);
        throw std::runtime_error("tcp_proxy: cannot listen");
    }
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { run(); });
}

tcp_proxy::~tcp_proxy() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    ::close(listen_fd_);
}

void tcp_proxy::run() {
    struct pair {
        int client = -1;
        int server = -1;
        std::size_t budget = SIZE_MAX;  // server bytes the client may still get (trickle)
    };
    std::vector<pair> pairs;
    std::array<char, 64 * 1024> buf{};
    auto close_pair = [](pair& p) {
        ::close(p.client);
        ::close(p.server);
        p.client = p.server = -1;
    };
    while (!stop_) {
        if (drop_.exchange(false)) {
            for (auto& p : pairs) close_pair(p);
            pairs.clear();
        }
        const bool frozen = frozen_;
        std::vector<pollfd> fds;
        std::vector<std::pair<std::size_t, bool>> polled;  // per fds[i > 0]: (pair, from the client)
        fds.push_back({listen_fd_, POLLIN, 0});
        if (!frozen) {
            for (std::size_t k = 0; k < pairs.size(); ++k) {
                if (pairs[k].budget == 0) continue;  // trickled out: never moves again
                fds.push_back({pairs[k].client, POLLIN, 0});
                polled.emplace_back(k, true);
                fds.push_back({pairs[k].server, POLLIN, 0});
                polled.emplace_back(k, false);
            }
        }
        // A short timeout so that freeze, thaw and the destructor take effect promptly.
        const int n = ::poll(fds.data(), fds.size(), 20);
        if (n <= 0) continue;
        if ((fds[0].revents & POLLIN) != 0) {
            const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (c >= 0) {
                ++accepted_;
                const int s = connect_to(host_, target_port_.load());
                if (s < 0) {
                    ::close(c);
                } else {
                    const int one = 1;
                    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    const std::size_t t = trickle_;
                    pairs.push_back({c, s, t == 0 ? SIZE_MAX : t});
                }
            }
        }
        if (frozen) continue;
        for (std::size_t i = 1; i < fds.size(); ++i) {
            if (fds[i].revents == 0) continue;
            const auto [k, from_client] = polled[i - 1];
            pair& p = pairs[k];
            if (p.client < 0 || p.budget == 0) continue;
            const int from = from_client ? p.client : p.server;
            const int to = from_client ? p.server : p.client;
            const ssize_t r = ::recv(from, buf.data(), buf.size(), MSG_DONTWAIT);
            if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (r <= 0) {
                close_pair(p);
                continue;
            }
            std::size_t len = static_cast<std::size_t>(r);
            if (!from_client && p.budget != SIZE_MAX) {
                len = std::min(len, p.budget);
                p.budget -= len;
            }
            if (!send_all(to, buf.data(), len)) close_pair(p);
        }
        std::erase_if(pairs, [](const pair& p) { return p.client < 0; });
    }
    for (auto& p : pairs) close_pair(p);
}

}  // namespace cairn::test
