// Indexes against the model (issue 5), through the real cairnd and real shards: random puts and
// deletes of a few entries with random, distinct client timestamps (so the order they are
// applied in is not the order that wins), some sent twice (a duplicate write), an index created
// at a random point and cleaner runs at random points. Every query answers
// exactly what filtering the model's entities answers — never a stale hit, and no missing one
// once the cleaner has run — and after a last cleaner run the index table's live rows are exactly
// the model's index rows.
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/wait.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <fmt/format.h>

#include <map>
#include <set>
#include <thread>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
const std::string index_queries_db = "cairn_prop_index_queries";

struct step {
    enum class what { put, del, create_index, clean } action = what::put;
    int entry = 0;
    int user = 0;  // 0: the body has no user_id (not in the index)
    std::uint64_t ts = 0;
    bool repeat = false;  // send it twice
};

rc::Gen<step> gen_step() {
    return rc::gen::exec([] {
        step s;
        const int k = *rc::gen::inRange(0, 20);
        s.action = k < 13 ? step::what::put : k < 18 ? step::what::del : step::what::clean;
        s.entry = *rc::gen::inRange(0, 6);
        s.user = *rc::gen::inRange(0, 4);  // 0: no user_id
        s.ts = 1'795'392'000'000 + *rc::gen::inRange<std::uint64_t>(0, 12) * 1000;
        s.repeat = *rc::gen::element(false, false, true);
        return s;
    });
}

// Each case has its own entries, users and index, so that the cases share one cairnd and one kind.
std::string entry_hex(int c, int entry) { return fmt::format("{:016x}{:016x}", c + 1, entry + 1); }
std::string user_hex(int c, int user) { return fmt::format("{:016x}{:016x}", 0xabc0 + c, user); }
std::string uuid_of(const std::string& hex) {
    return fmt::format("{}-{}-{}-{}-{}", hex.substr(0, 8), hex.substr(8, 4), hex.substr(12, 4), hex.substr(16, 4), hex.substr(20));
}

class index_queries : public cairnd_test {
protected:
    bool send(const std::string& method, const std::string& target, const std::string& body) {
        auto r = http_request(port(), method, target, body);
        return r && r->status == 202;
    }
    json get(const std::string& target) {
        auto r = http_get(port(), target);
        RC_ASSERT(r.has_value());
        RC_ASSERT(r->status == 200);
        return json::parse(r->body);
    }
    // Runs the cleaner from start to end after everything written so far: a run already going
    // (the back-fill a create starts, 409) may have passed the rows written since, so it is
    // waited out and a new run started.
    void clean_and_wait(const std::string& index) {
        auto wait_done = [&] {
            const bool done = wait_until([&] { return get(fmt::format("/v1/indexes/{}/clean", index))["state"] != "running"; }, 30s);
            if (!done) RC_FAIL("the cleaner did not finish");
        };
        for (int attempt = 0; attempt < 10; ++attempt) {
            auto r = http_post(port(), fmt::format("/v1/indexes/{}/clean?rate=1000000", index), "");
            RC_ASSERT(r.has_value());
            RC_ASSERT(r->status == 202 || r->status == 409);
            wait_done();
            if (r->status == 202) return;
        }
        RC_FAIL("the cleaner could not be started");
    }
    // Every entity id the query answers for user u, over all pages.
    std::set<std::string> query(int c, const std::string& index, int user) {
        auto all = index_query_all(port(), fmt::format("/v1/entities/entry/by/{}?user_id={}&limit=2", index, user_hex(c, user)), 50);
        RC_ASSERT(all.has_value());
        std::set<std::string> out;
        for (const auto& e : *all) {
            RC_ASSERT(e["body"]["user_id"] == user_hex(c, user));  // never a stale hit
            RC_ASSERT(out.insert(e["id"].get<std::string>()).second);
        }
        return out;
    }
};

TEST_F(index_queries, queries_and_index_rows_equal_the_model_through_random_writes_and_cleaner_runs) {
    CAIRN_REQUIRE_SHARDS(2u);
    cairnd_options o;
    o.extra_toml = "[entities]\nkinds = [\"entry\"]\n";
    start_cairnd(index_queries_db, o);
    int next_case = 0;

    const bool ok = rc::check("index queries equal the model's filter", [&] {
        const int c = next_case++;
        const std::string index = fmt::format("case{}_by_user", c);
        const auto count = *rc::gen::inRange<std::size_t>(1, 12);
        auto steps = *rc::gen::container<std::vector<step>>(count, gen_step());
        // The index is created at a random point: before, between or after the writes.
        const auto create_at = *rc::gen::inRange<std::size_t>(0, steps.size() + 1);
        steps.insert(steps.begin() + static_cast<std::ptrdiff_t>(create_at), step{step::what::create_index});
        // The model: per entry the write with the greatest (ts, tombstone, body) wins.
        struct version {
            std::uint64_t ts = 0;
            bool deleted = false;
            int user = 0;
        };
        std::map<int, version> model;
        bool created = false;
        int n = 0;
        for (const auto& s : steps) {
            ++n;
            if (s.action == step::what::create_index) {
                if (created) continue;
                auto r = http_post(port(), "/v1/indexes",
                                   fmt::format(R"({{"name": "{}", "kind": "entry", "properties": [{{"name": "user_id", "type": "id"}}]}})",
                                               index));
                RC_ASSERT(r.has_value());
                RC_ASSERT(r->status == 201);
                created = true;
                continue;
            }
            if (s.action == step::what::clean) {
                if (created) clean_and_wait(index);
                continue;
            }
            // Distinct timestamps: the winner of every entry is unambiguous.
            const std::uint64_t ts = s.ts + static_cast<std::uint64_t>(n);
            const auto target = fmt::format("/v1/entities/entry/{}?wait=applied&ts={}", entry_hex(c, s.entry), ts);
            const std::string body = s.user ? fmt::format(R"({{"user_id": "{}", "n": {}}})", user_hex(c, s.user), n) : fmt::format(R"({{"n": {}}})", n);
            const bool del = s.action == step::what::del;
            for (int times = 0; times < (s.repeat ? 2 : 1); ++times) {
                RC_ASSERT(send(del ? "DELETE" : "PUT", target, del ? std::string() : body));
            }
            auto& v = model[s.entry];
            if (ts > v.ts) v = {ts, del, del ? 0 : s.user};
        }
        // Queries never answer a stale hit (checked in query()), and after a cleaner run that
        // followed the last write they answer every match.
        clean_and_wait(index);
        for (int u = 1; u <= 4; ++u) {
            std::set<std::string> expected;
            for (const auto& [entry, v] : model) {
                if (!v.deleted && v.user == u) expected.insert(uuid_of(entry_hex(c, entry)));
            }
            RC_ASSERT(query(c, index, u) == expected);
        }
        // The table holds exactly the model's live rows.
        std::set<std::pair<std::string, std::string>> rows;
        for (const auto& sh : test_shards()) {
            auto r = query_sql(sh, fmt::format("SELECT LOWER(HEX(p0)), LOWER(HEX(entity_id)) FROM index_{} WHERE deleted = 0", index), index_queries_db);
            RC_ASSERT(r.has_value());
            const auto mine = fmt::format("{:016x}", 0xabc0 + c);  // the earlier cases' entries are indexed too
            for (const auto& line : r.value()) {
                const auto tab = line.find('\t');
                if (line.compare(0, mine.size(), mine) == 0) rows.emplace(line.substr(0, tab), line.substr(tab + 1));
            }
        }
        std::set<std::pair<std::string, std::string>> expected_rows;
        for (const auto& [entry, v] : model) {
            if (!v.deleted && v.user) expected_rows.emplace(user_hex(c, v.user), entry_hex(c, entry));
        }
        RC_ASSERT(rows == expected_rows);
        // Every put carries the rows of every index of its kind: drop this case's.
        auto dropped = http_request(port(), "DELETE", "/v1/indexes/" + index, "");
        RC_ASSERT(dropped.has_value());
        RC_ASSERT(dropped->status == 200);
    });
    EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace cairn::test
