#include "tests/support/cairnd_process.hpp"

#include "tests/support/e2e.hpp"
#include "tests/support/wait.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace cairn::test {

std::uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

std::string make_temp_dir(const std::string& prefix) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/{}-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
    return buf.data();
}

cairnd_process::cairnd_process(cairnd_options opts) : opts_(std::move(opts)) {
    if (opts_.shards.empty()) opts_.shards = test_shards();
    dir_ = make_temp_dir("cairnd-test");
    if (opts_.journal_dir.empty()) opts_.journal_dir = dir_ + "/journal";
    config_path_ = dir_ + "/cairn.toml";
    log_path_ = dir_ + "/cairnd.log";
    port_ = free_port();
    std::ofstream cfg(config_path_);
    cfg << fmt::format("node_id = {}\nlog_level = \"info\"\n", opts_.node_id);
    cfg << fmt::format("[listen]\naddress = \"127.0.0.1\"\nport = {}\nthreads = 2\n", port_);
    cfg << fmt::format("[journal]\npath = \"{}\"\n{}\n", opts_.journal_dir, opts_.journal_toml);
    cfg << fmt::format(
        "[apply]\nretry_attempts_max = {}\nretry_backoff_initial_ms = 50\nretry_backoff_max_ms = 400\n"
        "outage_backoff_max_ms = 500\nconnect_timeout_ms = 1000\nquery_timeout_ms = 5000\n{}\n",
        opts_.retry_attempts_max, opts_.apply_toml);
    for (std::size_t i = 0; i < opts_.shards.size(); ++i) {
        const auto& s = opts_.shards[i];
        const bool own = i < opts_.shard_databases.size() && !opts_.shard_databases[i].empty();
        cfg << fmt::format("[[shards]]\nhost = \"{}\"\nport = {}\nuser = \"cairn\"\npassword = \"cairn\"\ndatabase = \"{}\"\n",
                           s.host, s.port, own ? opts_.shard_databases[i] : opts_.database);
    }
    cfg << opts_.extra_toml << "\n";
}

cairnd_process::~cairnd_process() {
    if (pid_ > 0) kill9();
}

bool cairnd_process::start(std::chrono::seconds timeout) {
    // Many tests start a gateway with a new journal on a database an earlier test's gateway used
    // (node id 1 both): cairnd would refuse it (docs/operations.md), so a fresh journal first
    // forgets its node id's lease there, unless the test is about leases. (No table yet: nothing to do.)
    std::error_code fs_ec;
    const bool fresh_journal =
        !std::filesystem::exists(opts_.journal_dir, fs_ec) || std::filesystem::is_empty(opts_.journal_dir, fs_ec);
    if (!opts_.shards.empty() && !opts_.database.empty()) lock_database(opts_.database);
    if (!opts_.keep_leases && !opts_.shards.empty() && fresh_journal) {
        (void)exec_sql(opts_.shards[0], {fmt::format("DELETE FROM gateway_leases WHERE node_id = {}", opts_.node_id)},
                       opts_.database);
    }
    const std::string binary = CAIRN_CAIRND_PATH;
    std::vector<std::string> args{binary, "--config", config_path_};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_entries;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string entry(*e);
        const auto name = entry.substr(0, entry.find('=') + 1);
        const bool replaced = std::any_of(opts_.env.begin(), opts_.env.end(),
                                          [&](const std::string& x) { return x.rfind(name, 0) == 0; });
        if (!replaced) env_entries.push_back(entry);
    }
    for (const auto& e : opts_.env) env_entries.push_back(e);
    std::vector<char*> envp;
    for (auto& e : env_entries) envp.push_back(e.data());
    envp.push_back(nullptr);
    // fork + exec rather than posix_spawn, for two things the child does before exec: it dies with
    // the test process (PR_SET_PDEATHSIG: a test that crashes leaves no cairnd behind, holding its
    // port and database), and it closes every descriptor beyond stderr (the test's sockets and
    // files must not live on in cairnd). Only async-signal-safe calls between fork and exec.
    const pid_t parent = ::getpid();
    const int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) return false;
    pid_ = ::fork();
    if (pid_ == 0) {
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
        if (::dup2(log_fd, STDOUT_FILENO) < 0 || ::dup2(log_fd, STDERR_FILENO) < 0) ::_exit(127);
        ::close_range(3, ~0U, 0);
        ::execve(binary.c_str(), argv.data(), envp.data());
        ::_exit(127);
    }
    ::close(log_fd);
    if (pid_ < 0) {
        pid_ = -1;
        return false;
    }
    bool exited = false;  // it will not become ready: stop waiting
    const bool ended = wait_until(
        [&] {
            exited = !running();
            if (exited) return true;
            if (opts_.ready_by_log) return log_tail(1 << 20).find("cairnd listening on") != std::string::npos;
            const auto r = http_get(port_, "/livez");
            return r && r->status == 200;
        },
        timeout);
    return ended && !exited;
}

bool cairnd_process::running() {
    if (pid_ <= 0) return false;
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
        pid_ = -1;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return false;
    }
    return true;
}

void cairnd_process::kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
}

int cairnd_process::wait_exit(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return -1;
    int code = -1;
    wait_until(
        [&] {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
            pid_ = -1;
            code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            return true;
        },
        timeout, std::chrono::milliseconds(20));
    return code;
}

int cairnd_process::terminate(std::chrono::seconds timeout) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    const int code = wait_exit(timeout);
    if (code < 0) kill9();
    return code;
}

std::string cairnd_process::log_tail(std::size_t bytes) const {
    std::ifstream in(log_path_);
    std::stringstream ss;
    ss << in.rdbuf();
    auto s = ss.str();
    return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

}  // namespace cairn::test
