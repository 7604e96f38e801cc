#include "apps/bench/cairnd_runner.hpp"

#include "core/log_task_end.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

extern char** environ;

namespace cairn::bench {

namespace asio = boost::asio;
namespace http = boost::beast::http;

core::result<http_result> http_get_sync(const std::string& host, std::uint16_t port, const std::string& target,
                                        std::chrono::milliseconds timeout) {
    asio::io_context ioc;
    core::result<http_result> out = core::errc::timeout;
    http_conn conn(ioc.get_executor(), host, port, timeout);
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            auto r = co_await conn.async_request(http::verb::get, target);
            out = std::move(r);
        },
        core::log_task_end{"bench-http-get"});
    ioc.run();
    return out;
}

std::optional<std::uint64_t> parse_total_lag(const std::string& body) {
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    auto checks = j.find("checks");
    if (checks == j.end() || !checks->is_object()) return std::nullopt;
    auto shards = checks->find("shards");
    if (shards == checks->end() || !shards->is_array() || shards->empty()) return std::nullopt;
    std::uint64_t total = 0;
    for (const auto& s : *shards) {
        if (!s.is_object() || !s.contains("lag_ops") || !s["lag_ops"].is_number_unsigned()) return std::nullopt;
        total += s["lag_ops"].get<std::uint64_t>();
    }
    return total;
}

std::uint16_t pick_free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    std::uint16_t port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
        socklen_t len = sizeof addr;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) port = ntohs(addr.sin_port);
    }
    ::close(fd);
    return port;
}

cairnd_child::~cairnd_child() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
}

core::result<void> cairnd_child::spawn(bool paused) {
    std::vector<std::string> args{spec_.binary, "--config", spec_.config, "--journal", spec_.journal_dir, "--port",
                                  std::to_string(spec_.port)};
    if (paused) args.emplace_back("--apply-paused");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = spec_.log_path.empty() ? std::string("/dev/null") : spec_.log_path;
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    spawned_at_ = std::chrono::steady_clock::now();
    const int rc = posix_spawn(&pid_, spec_.binary.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        pid_ = -1;
        return core::error_code(rc, boost::system::system_category());
    }
    return core::success();
}

bool cairnd_child::running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
    }
    return true;
}

core::result<std::chrono::nanoseconds> cairnd_child::wait_ready(std::chrono::milliseconds timeout,
                                                                std::chrono::milliseconds poll) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!running()) return core::errc::shard_unavailable;
        auto r = http_get_sync("127.0.0.1", spec_.port, "/readyz", std::chrono::milliseconds(1000));
        if (r && r.value().status_code == 200) return std::chrono::steady_clock::now() - spawned_at_;
        std::this_thread::sleep_for(poll);
    }
    return core::errc::timeout;
}

int cairnd_child::stop(std::chrono::seconds timeout) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return -1;
}

}  // namespace cairn::bench
