// Helpers for the journal tests: a temporary directory, an injectable wall clock, op makers and
// synchronous wrappers that wait for a callback. Test-only; no sleeps anywhere.
#pragma once

#include "core/codec.hpp"
#include "core/hlc.hpp"
#include "journal/journal.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

namespace cairn::journal::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at the end.
class temp_dir {
public:
    temp_dir() : temp_dir(default_base()) {}
    explicit temp_dir(const std::string& base) {
        std::string tmpl = base + "/cairn-journal-XXXXXX";
        char* made = ::mkdtemp(tmpl.data());
        if (made == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = made;
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    const std::string& path() const { return path_; }
    std::string sub(const std::string& name) const { return path_ + "/" + name; }

    static std::string default_base() {
        const char* base = std::getenv("TMPDIR");
        return base != nullptr ? base : "/tmp";
    }
    // tmpfs, where fsync costs nothing: for tests that check logic over many commits rather
    // than durability (which the killed-process test checks on the real disk).
    static std::string memory_base() {
        std::error_code ec;
        return std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                                                                                                 : default_base();
    }

private:
    std::string path_;
};

// Wall time that only moves when a test moves it; safe to read from the writer thread.
struct manual_wall {
    std::shared_ptr<std::atomic<std::uint64_t>> ms = std::make_shared<std::atomic<std::uint64_t>>(1'700'000'000'000);
    core::wall_clock_ms fn() const {
        return [m = ms] { return m->load(); };
    }
    void advance(std::uint64_t d) { ms->fetch_add(d); }
    std::uint64_t now() const { return ms->load(); }
};

inline options test_options(const std::string& path, const manual_wall& wall) {
    options o;
    o.path = path;
    o.size_bytes_max = 64ull * 1024 * 1024;
    o.node_id = 7;
    o.wall_ms = wall.fn();
    return o;
}

inline core::op make_op(std::int64_t i, std::uint64_t ts, std::uint64_t op_id = 0) {
    core::edge_op e;
    e.graph = "follows";
    e.source_id = i;
    e.destination_id = i + 1000;
    e.state = static_cast<core::edge_state>(static_cast<std::uint64_t>(i) % 4);
    e.position = i * 3;
    e.sets_position = i % 2 == 0;
    return core::op{op_id, ts, e};
}

inline std::vector<core::op> make_ops(std::size_t n, core::hlc& clock, std::int64_t base = 0) {
    std::vector<core::op> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(make_op(base + static_cast<std::int64_t>(i), clock.now()));
    return out;
}

// The stored record of o after the writer gave it seq.
inline std::string expected_bytes(core::op o, std::uint64_t node_id, std::uint64_t seq) {
    if (o.op_id == 0) o.op_id = core::make_op_id(node_id, seq);
    return core::encode_op(o);
}

// Collects the results of callbacks numbered 0..n-1, in the order they were called. Its state is
// shared with the callbacks, so a callback may still be returning when the test moves on.
template <class T>
class collector {
public:
    std::function<void(core::result<T>)> callback(std::size_t index) const {
        return [s = s_, index](core::result<T> r) {
            std::lock_guard lock(s->mu);
            s->calls.emplace_back(index, std::move(r));
            s->cv.notify_all();
        };
    }
    // Waits until n callbacks were called; returns them in call order.
    std::vector<std::pair<std::size_t, core::result<T>>> wait(std::size_t n) const {
        std::unique_lock lock(s_->mu);
        s_->cv.wait(lock, [&] { return s_->calls.size() >= n; });
        return s_->calls;
    }
    // The one result of callback index (waiting for it); asserts that it was called once.
    core::result<T> get(std::size_t index) const {
        std::unique_lock lock(s_->mu);
        const core::result<T>* found = nullptr;
        s_->cv.wait(lock, [&] {
            found = nullptr;
            for (const auto& [i, r] : s_->calls) {
                if (i == index) {
                    EXPECT_EQ(found, nullptr) << "callback " << index << " called twice";
                    found = &r;
                }
            }
            return found != nullptr;
        });
        return *found;
    }
    std::size_t count() const {
        std::lock_guard lock(s_->mu);
        return s_->calls.size();
    }

private:
    struct state {
        std::mutex mu;
        std::condition_variable cv;
        std::vector<std::pair<std::size_t, core::result<T>>> calls;
    };
    std::shared_ptr<state> s_ = std::make_shared<state>();
};

inline core::result<appended> append_sync(journal& j, std::vector<core::op> ops, std::string key = {}) {
    collector<appended> c;
    j.append(std::move(ops), std::move(key), c.callback(0));
    return c.get(0);
}

inline core::result<void> commit_sync(journal& j, apply_outcome o) {
    collector<void> c;
    j.commit_outcome(std::move(o), c.callback(0));
    return c.get(0);
}

inline core::result<void> advance_cursor(journal& j, std::uint32_t shard, std::uint64_t seq) {
    apply_outcome o;
    o.shard = shard;
    o.cursor = seq;
    return commit_sync(j, std::move(o));
}

// Holds the writer inside the commit listener of its first append commit until release():
// whatever is appended meanwhile waits in the queue and goes into the next group. The state is
// shared with the listener, so the gate may go away before the journal.
class writer_gate {
public:
    explicit writer_gate(journal& j) {
        j.set_commit_listener([s = s_](std::uint64_t) {
            if (!s->entered.exchange(true)) {
                s->entered_promise.set_value();
                s->release_future.wait();
            }
        });
    }
    void wait_entered() { s_->entered_promise.get_future().wait(); }
    void release() { s_->release_promise.set_value(); }

private:
    struct state {
        std::atomic<bool> entered{false};
        std::promise<void> entered_promise;
        std::promise<void> release_promise;
        std::shared_future<void> release_future = release_promise.get_future().share();
    };
    std::shared_ptr<state> s_ = std::make_shared<state>();
};

}  // namespace cairn::journal::test
