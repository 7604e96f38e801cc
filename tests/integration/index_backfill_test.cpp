// The cleaner (issue 5) on real shards: 100,000 FriendFeed entries exist before an index on
// `link` is created; its back-fill runs while writes continue (new entries, entries whose link
// changes, deletes). When the back-fill is done every entry that existed before it is in the
// index; once writes stop and a second cleaner run finishes, the index's live rows are exactly
// the (link, id) of every live entry — no missing row, no stale one.
#include "core/document.hpp"
#include "core/shard_map.hpp"
#include "tests/support/cairnd_fixture.hpp"
#include "tests/support/e2e.hpp"
#include "tests/support/wait.hpp"

#include <gtest/gtest.h>
#include <msgpack.hpp>

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

namespace cairn::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
const std::string index_backfill_db = "cairn_e2e_backfill";
constexpr int preloaded = 100'000;

std::string id_hex(int i) { return fmt::format("{:032x}", 0x5000000 + i); }

std::string hex_of(std::string_view bytes) {
    std::string out;
    for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
    return out;
}

// The stored body of {"link": .., "user_id": ..}: canonical msgpack (std::map orders the keys).
std::string stored_body(const std::string& link) {
    std::map<std::string, std::string> body{{"link", link}, {"user_id", "0000000000000000000000000000000a"}};
    msgpack::sbuffer buf;
    msgpack::pack(buf, body);
    return core::encode_body(std::string_view(buf.data(), buf.size()), 512);
}

// Entries written straight into the shards' entities tables (as if written long ago).
void preload(const std::vector<shard_endpoint>& shards) {
    const auto map = core::shard_map::equal_ranges(static_cast<std::uint32_t>(shards.size()));
    std::vector<std::string> statements(shards.size());
    std::vector<std::vector<std::string>> batches(shards.size());
    for (int i = 0; i < preloaded; ++i) {
        const auto id = *core::parse_id16(id_hex(i));
        const auto s = map.shard_of_hash(core::hash_bytes(core::id16_bytes(id)));
        auto& sql = statements[s];
        sql += fmt::format("{}(X'656e747279',X'{}',{},0,X'{}')", sql.empty() ? "INSERT INTO entities (kind, id, ts, deleted, body) VALUES " : ",",
                           id_hex(i), 1000 + i, hex_of(stored_body(fmt::format("http://example.com/{}", i % 5000))));
        if (sql.size() > 512 * 1024) {
            batches[s].push_back(std::move(sql));
            sql.clear();
        }
    }
    for (std::size_t s = 0; s < shards.size(); ++s) {
        if (!statements[s].empty()) batches[s].push_back(std::move(statements[s]));
        auto r = exec_sql(shards[s], batches[s], index_backfill_db);
        ASSERT_TRUE(r) << r.error().message();
    }
}

// (link, id hex) of every live entry, read from the entities tables: the model of the index.
std::set<std::pair<std::string, std::string>> live_links(const std::vector<shard_endpoint>& shards) {
    std::set<std::pair<std::string, std::string>> out;
    for (const auto& s : shards) {
        auto rows = query_sql(s, "SELECT HEX(id), HEX(body) FROM entities WHERE kind = 'entry' AND deleted = 0", index_backfill_db);
        EXPECT_TRUE(rows.has_value());
        if (!rows) continue;
        for (const auto& line : rows.value()) {
            const auto tab = line.find('\t');
            std::string body_hex = line.substr(tab + 1);
            std::string stored;
            for (std::size_t i = 0; i + 1 < body_hex.size(); i += 2) stored += static_cast<char>(std::stoi(body_hex.substr(i, 2), nullptr, 16));
            auto packed = core::decode_body(stored, 1 << 20);
            EXPECT_TRUE(packed.has_value());
            if (!packed) continue;
            auto oh = msgpack::unpack(packed.value().data(), packed.value().size());
            const auto body = oh.get().as<std::map<std::string, std::string>>();
            if (!body.count("link")) continue;
            std::string id = line.substr(0, tab);
            for (auto& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            out.emplace(body.at("link"), id);
        }
    }
    return out;
}

std::set<std::pair<std::string, std::string>> index_rows(const std::vector<shard_endpoint>& shards) {
    std::set<std::pair<std::string, std::string>> out;
    for (const auto& s : shards) {
        auto rows = query_sql(s, "SELECT p0, LOWER(HEX(entity_id)) FROM index_entries_by_link WHERE deleted = 0", index_backfill_db);
        EXPECT_TRUE(rows.has_value());
        if (!rows) continue;
        for (const auto& line : rows.value()) {
            const auto tab = line.find('\t');
            out.emplace(line.substr(0, tab), line.substr(tab + 1));
        }
    }
    return out;
}

class index_backfill : public cairnd_test {
protected:
    json wait_cleaner_done(std::chrono::seconds timeout) {
        json p;
        const bool done = wait_until(
            [&] {
                auto r = http_get(port(), "/v1/indexes/entries_by_link/clean");
                if (!r || r->status != 200) return false;
                p = json::parse(r->body);
                return p["state"] != "running";
            },
            timeout, 200ms);
        if (!done) ADD_FAILURE() << "the cleaner did not finish in time: " << p.dump();
        return p;
    }
};

TEST_F(index_backfill, a_new_index_over_100000_entities_is_backfilled_complete_and_exact_while_writes_continue) {
    CAIRN_REQUIRE_SHARDS(2u);
    const auto shards = test_shards();
    cairnd_options o;
    o.extra_toml = "[entities]\nkinds = [\"entry\"]\n";
    start_cairnd(index_backfill_db, o);
    preload(shards);
    ASSERT_FALSE(HasFatalFailure());
    const auto before = live_links(shards);
    ASSERT_EQ(before.size(), static_cast<std::size_t>(preloaded));

    auto created = http_post(port(), "/v1/indexes",
                             R"({"name": "entries_by_link", "kind": "entry", "properties": [{"name": "link", "type": "string", "length": 200}]})");
    ASSERT_TRUE(created);
    ASSERT_EQ(created->status, 201) << created->body;

    // Writes while the back-fill runs: new entries, moved links, deletes.
    std::atomic<bool> stop{false};
    std::atomic<int> written{0};
    std::thread writer([&] {
        for (int i = 0; !stop && i < 3000; ++i) {
            const int target = (i % 3 == 0) ? preloaded + i : (i * 37) % preloaded;
            std::optional<simple_reply> r;
            if (i % 10 == 9) {
                r = http_request(port(), "DELETE", fmt::format("/v1/entities/entry/{}", id_hex(target)), "");
            } else {
                r = http_request(port(), "PUT", fmt::format("/v1/entities/entry/{}", id_hex(target)),
                                 fmt::format(R"({{"link": "http://moved.example/{}", "user_id": "0000000000000000000000000000000a"}})", i));
            }
            if (r && r->status == 202) ++written;
        }
    });
    const auto first = wait_cleaner_done(300s);
    stop = true;
    writer.join();
    EXPECT_EQ(first["state"], "done") << first.dump();
    EXPECT_GE(first["rows_scanned"].get<std::uint64_t>(), static_cast<std::uint64_t>(preloaded));
    EXPECT_GT(written.load(), 0);
    ASSERT_TRUE(wait_applied(port(), 120s));

    // Complete: every entry that existed before and still holds its link is in the index.
    const auto live_now = live_links(shards);
    const auto rows_after_first = index_rows(shards);
    std::size_t missing = 0;
    for (const auto& e : before) {
        if (live_now.contains(e) && !rows_after_first.contains(e)) ++missing;
    }
    EXPECT_EQ(missing, 0u);

    // Exact: a second run with writes stopped leaves exactly the live entries' rows.
    auto again = http_post(port(), "/v1/indexes/entries_by_link/clean?rate=1000000", "");
    ASSERT_TRUE(again);
    ASSERT_EQ(again->status, 202) << again->body;
    const auto second = wait_cleaner_done(300s);
    EXPECT_EQ(second["state"], "done") << second.dump();
    const auto rows = index_rows(shards);
    EXPECT_EQ(rows.size(), live_now.size());
    EXPECT_TRUE(rows == live_now) << "index rows differ from the live entries";
    std::cout << "backfill: " << first.dump() << "\nsecond run: " << second.dump() << "\nwrites during the backfill: " << written
              << "\n";
}

}  // namespace
}  // namespace cairn::test
