// issue 20: an index created (and dropped, and created again) while puts, changes and deletes run
// concurrently must, once its back-fill reports done, find every entity whose latest write was
// acknowledged before the query's after= seq, and no other. Through the real cairnd and real
// shards: writer threads own disjoint entities and write them with increasing client timestamps
// (so the model's winner of each entity is its last acknowledged write), while the test thread
// creates and drops indexes at random moments (moments counted in acknowledged writes, so the
// test waits on conditions, never on time).
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/wait.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
const std::string index_race_db = "cairn_prop_index_race";
constexpr int users = 4;

std::string race_entry_hex(int c, int entry) { return fmt::format("{:016x}{:016x}", 0x5000 + c, entry + 1); }
std::string race_user_hex(int c, int user) { return fmt::format("{:016x}{:016x}", 0x7000 + c, user); }
std::string race_uuid_of(const std::string& hex) {
    return fmt::format("{}-{}-{}-{}-{}", hex.substr(0, 8), hex.substr(8, 4), hex.substr(12, 4), hex.substr(16, 4), hex.substr(20));
}

// One case's writes: each thread owns the entries e with e % threads == t and writes them in
// random order with a shared, increasing client ts; the last acknowledged write of an entry wins.
class writers {
public:
    struct latest {
        std::uint64_t ts = 0;
        bool deleted = true;
        int user = 0;  // 0: no user_id in the body
    };

    writers(std::uint16_t port, int c, int entries, int threads, int ops_per_thread, std::uint64_t seed) {
        for (int t = 0; t < threads; ++t) {
            threads_.emplace_back([=, this] {
                std::mt19937_64 rng(seed + static_cast<std::uint64_t>(t));
                http_client client(port);
                for (int i = 0; i < ops_per_thread && !stop_; ++i) {
                    const int mine = (entries + threads - 1 - t) / threads;
                    if (mine == 0) break;
                    const int e = t + threads * static_cast<int>(rng() % static_cast<std::uint64_t>(mine));
                    const bool del = rng() % 5 == 0;
                    const int user = static_cast<int>(rng() % (users + 1));
                    const std::uint64_t ts = ts_base + next_ts_.fetch_add(1);
                    const auto target = fmt::format("/v1/entities/entry/{}?ts={}", race_entry_hex(c, e), ts);
                    const std::string body =
                        user ? fmt::format(R"({{"user_id": "{}", "n": {}}})", race_user_hex(c, user), i) : fmt::format(R"({{"n": {}}})", i);
                    auto r = client.send(del ? http::verb::delete_ : http::verb::put, target, del ? std::string() : body);
                    if (!r || r.value().code() != 202) {
                        failed_ = true;
                        return;
                    }
                    const auto seq = json::parse(r.value().body)["seq"].get<std::uint64_t>();
                    std::lock_guard lock(mu_);
                    auto& l = model_[e];
                    if (ts > l.ts) l = {ts, del, del ? 0 : user};
                    max_seq_ = std::max(max_seq_, seq);
                    ++acked_;
                }
            });
        }
    }
    ~writers() { join(); }
    void join() {
        for (auto& t : threads_) {
            if (t.joinable()) t.join();
        }
    }
    std::size_t acked() {
        std::lock_guard lock(mu_);
        return acked_;
    }
    bool failed() const { return failed_; }
    std::uint64_t max_seq() {
        std::lock_guard lock(mu_);
        return max_seq_;
    }
    std::map<int, latest> model() {
        std::lock_guard lock(mu_);
        return model_;
    }

private:
    static constexpr std::uint64_t ts_base = 1'795'392'000'000;
    inline static std::atomic<std::uint64_t> next_ts_{0};  // distinct across cases too
    std::atomic<bool> stop_{false};
    std::atomic<bool> failed_{false};
    std::mutex mu_;
    std::map<int, latest> model_;
    std::uint64_t max_seq_ = 0;
    std::size_t acked_ = 0;
    std::vector<std::thread> threads_;
};

class index_race : public cairnd_test {
protected:
    json get(const std::string& target) {
        auto r = http_get(port(), target);
        RC_ASSERT(r.has_value());
        if (r->status != 200) RC_FAIL(fmt::format("GET {}: {} {}", target, r->status, r->body));
        return json::parse(r->body);
    }
    void create(const std::string& index) {
        auto r = http_post(port(), "/v1/indexes",
                           fmt::format(R"({{"name": "{}", "kind": "entry", "properties": [{{"name": "user_id", "type": "id"}}]}})", index));
        RC_ASSERT(r.has_value());
        if (r->status != 201) RC_FAIL(fmt::format("create {}: {} {}", index, r->status, r->body));
    }
    void drop(const std::string& index) {
        auto r = http_request(port(), "DELETE", "/v1/indexes/" + index, "");
        RC_ASSERT(r.has_value());
        if (r->status != 200) RC_FAIL(fmt::format("drop {}: {} {}", index, r->status, r->body));
    }
    // Waits until the index's back-fill (the run its create started) reports done.
    void wait_backfill(const std::string& index) {
        const bool done = wait_until(
            [&] {
                const auto p = get(fmt::format("/v1/indexes/{}/clean", index));
                if (p["state"] != "done" && p["state"] != "running") {
                    RC_FAIL(fmt::format("back-fill of {} ended: {}", index, p.dump()));
                }
                return p["state"] == "done";
            },
            120s, 20ms);
        if (!done) RC_FAIL("the back-fill did not finish");
    }
    // Every entity id the index answers for user u with after=seq, over all pages.
    std::set<std::string> query(int c, const std::string& index, int user, std::uint64_t after) {
        auto all = index_query_all(port(), fmt::format("/v1/entities/entry/by/{}?user_id={}&limit=50&after={}&timeout_ms=20000",
                                                       index, race_user_hex(c, user), after));
        RC_ASSERT(all.has_value());
        std::set<std::string> out;
        for (const auto& e : *all) {
            RC_ASSERT(e["body"]["user_id"] == race_user_hex(c, user));  // never a stale hit
            RC_ASSERT(out.insert(e["id"].get<std::string>()).second);
        }
        return out;
    }
};

TEST_F(index_race, issue_20_an_index_created_under_concurrent_writes_finds_every_entity_after_its_backfill) {
    CAIRN_REQUIRE_SHARDS(2u);
    cairnd_options o;
    o.extra_toml = "[entities]\nkinds = [\"entry\"]\n";
    start_cairnd(index_race_db, o);
    int next_case = 0;

    const bool ok = rc::check("an index built under live writes equals the model", [&] {
        const int c = next_case++;
        const int entries = *rc::gen::inRange(10, 120);
        const int threads = *rc::gen::inRange(2, 4);
        const int ops = *rc::gen::inRange(20, 120);
        const auto seed = *rc::gen::arbitrary<std::uint64_t>();
        // Moments (in acknowledged writes) at which the index is created, dropped, created again.
        const std::size_t total = static_cast<std::size_t>(threads * ops);
        auto moments = *rc::gen::container<std::vector<std::size_t>>(*rc::gen::element<std::size_t>(1, 1, 3),
                                                                      rc::gen::inRange<std::size_t>(0, total * 3 / 4));
        std::sort(moments.begin(), moments.end());
        RC_TAG(moments.size());

        writers w(port(), c, entries, threads, ops, seed);
        std::vector<std::string> created;
        for (std::size_t m = 0; m < moments.size(); ++m) {
            while (w.acked() < moments[m] && !w.failed()) std::this_thread::yield();
            const std::string index = fmt::format("race{}_{}", c, m / 2);
            if (m % 2 == 0) {
                create(index);
                created.push_back(index);
            } else {
                drop(index);
                created.pop_back();
            }
        }
        w.join();
        RC_ASSERT(!w.failed());
        const auto model = w.model();
        const auto after = w.max_seq();
        for (const auto& index : created) {
            wait_backfill(index);
            for (int u = 1; u <= users; ++u) {
                std::set<std::string> expected;
                for (const auto& [entry, l] : model) {
                    if (!l.deleted && l.user == u) expected.insert(race_uuid_of(race_entry_hex(c, entry)));
                }
                const auto found = query(c, index, u, after);
                std::vector<std::string> missing;
                std::set_difference(expected.begin(), expected.end(), found.begin(), found.end(), std::back_inserter(missing));
                if (!missing.empty()) {
                    RC_FAIL(fmt::format("index {} misses {} of {} entities of user {} (e.g. {}) after seq {}", index,
                                        missing.size(), expected.size(), u, missing.front(), after));
                }
                RC_ASSERT(found == expected);
            }
            drop(index);
        }
    });
    EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace cairn::test
