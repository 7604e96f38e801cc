// Every page is one indexed range read: EXPLAIN of the statement async_page_edges sends (first,
// next and previous pages) must use the by_position index and never a filesort, on a table
// big enough that the optimizer has real choices.
#include <utility>

#include "shards/edge_store.hpp"
#include "tests/support/test_shards.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <sstream>

namespace cairn::test {
namespace {

TEST(edge_page_explain, every_page_is_a_range_read_of_by_position_without_filesort) {
    CAIRN_REQUIRE_SHARDS(1u);
    const std::string db = "cairn_explain_pages";
    fresh_edge_database(db);
    const auto s = test_shards().at(0);
    boost::asio::io_context ioc;
    shards::mariadb_conn conn(ioc.get_executor(), params_for(s, db));
    ASSERT_TRUE(run_on(ioc, conn.async_connect()));
    // 5 nodes x 2 directions x 400 edges in mixed states.
    std::string insert =
        "INSERT INTO edges (graph, node_id, direction, other_id, state, own_state, position, ts, pos_ts, pos_set) VALUES ";
    for (int node = 0; node < 5; ++node) {
        for (int dir = 0; dir < 2; ++dir) {
            for (int i = 0; i < 400; ++i) {
                insert += fmt::format("{}('g',{},{},{},{},{},{},1,1,1)", node + dir + i ? "," : "", node, dir, i, i % 4,
                                      i % 4, i * 7 % 101);
            }
        }
    }
    ASSERT_TRUE(exec_sql(s, {insert, "INSERT INTO edge_counts VALUES ('g',3,1,0,100),('g',3,0,0,100),('g',2,1,0,5)",
                             "ANALYZE TABLE edges"},
                         db));

    shards::edge_page_request req{"g", 3, shards::edge_direction::backward, core::edge_state::normal, 100, std::nullopt, {}};
    const std::vector<std::optional<core::page_cursor>> cursors = {
        std::nullopt, core::page_cursor{core::page_cursor::kind::next, 50, 17},
        core::page_cursor{core::page_cursor::kind::previous, 50, 17}};
    for (const auto& c : cursors) {
        req.cursor = c;
        // EXPLAIN of the very prepared statement cairn executes, with its parameters.
        const auto st = shards::page_edges_statement(req);
        const std::string& sql = st.sql;
        EXPECT_EQ(sql.find("OFFSET"), std::string::npos) << sql;
        auto explained = run_on(ioc, conn.async_query_prepared("EXPLAIN " + sql, st.params));
        ASSERT_TRUE(explained) << explained.error().message();
        ASSERT_EQ(explained.value().size(), 1u) << sql;
        // id, select_type, table, type, possible_keys, key, key_len, ref, rows, Extra
        std::vector<std::string> cols;
        std::string line;
        for (std::size_t i = 0; i < explained.value().columns(); ++i) {
            cols.push_back(std::string(explained.value().at(0, i).value_or("NULL")));
            line += cols.back() + "\t";
        }
        ASSERT_GE(cols.size(), 10u) << line;
        EXPECT_EQ(cols[5], "by_position") << sql << "\n" << line;
        // A cursor page reads a range of all six key parts; the first page the four-part prefix.
        EXPECT_EQ(cols[3], c ? "range" : "ref") << line;
        EXPECT_EQ(cols[9].find("filesort"), std::string::npos) << sql << "\n" << line;
        EXPECT_EQ(cols[9].find("temporary"), std::string::npos) << line;
        EXPECT_LE(std::stoi(cols[8]), 400) << "the read examines one node's rows at most: " << line;
    }
    // Among given other ends: a primary-key lookup per id (5 ids, padded to 8), whatever the node's size.
    req.other_ids = {7, 11, 13, 5000, 7};
    for (const auto& c : cursors) {
        req.cursor = c;
        const auto st = shards::page_edges_statement(req);
        auto explained = run_on(ioc, conn.async_query_prepared("EXPLAIN " + st.sql, st.params));
        ASSERT_TRUE(explained) << explained.error().message();
        ASSERT_EQ(explained.value().size(), 1u) << st.sql;
        std::string line;
        for (std::size_t i = 0; i < explained.value().columns(); ++i) line += std::string(explained.value().at(0, i).value_or("NULL")) + "\t";
        EXPECT_EQ(explained.value().at(0, 5).value_or(""), "PRIMARY") << st.sql << "\n" << line;
        EXPECT_EQ(explained.value().at(0, 3).value_or(""), "range") << line;
        EXPECT_LE(std::stoi(std::string(explained.value().at(0, 8).value_or("0"))), 8) << "one lookup per listed id: " << line;
    }
    // Counts (one or many keys in one statement): primary-key lookups of edge_counts.
    auto count = query_sql(s, "EXPLAIN SELECT node_id, direction, state, count FROM edge_counts FORCE INDEX (PRIMARY) "
                              "WHERE graph = 'g' AND (node_id, direction, state) IN ((3,1,0),(2,1,0))", db);
    ASSERT_TRUE(count);
    ASSERT_EQ(count.value().size(), 1u);
    EXPECT_NE(count.value()[0].find("PRIMARY"), std::string::npos) << count.value()[0];
}

}  // namespace
}  // namespace cairn::test
