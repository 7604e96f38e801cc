#include "shards/edge_store.hpp"

#include "core/assert.hpp"
#include "core/codec.hpp"
#include "shards/mariadb_conn.hpp"
#include "shards/transaction.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <limits>
#include <map>
#include <set>
#include <type_traits>

namespace cairn::shards {
namespace {

namespace asio = boost::asio;

constexpr std::string_view create_edges_sql = R"(CREATE TABLE IF NOT EXISTS edges (
  graph VARBINARY(32) NOT NULL,
  node_id BIGINT NOT NULL,
  direction TINYINT UNSIGNED NOT NULL COMMENT '0 forward: node is the source; 1 backward',
  other_id BIGINT NOT NULL,
  state TINYINT UNSIGNED NOT NULL COMMENT 'effective: 0 normal, 1 removed, 2 archived, 3 negative',
  own_state TINYINT UNSIGNED NOT NULL COMMENT 'set by edge ops alone; state adds node ops',
  position BIGINT NOT NULL,
  ts BIGINT UNSIGNED NOT NULL COMMENT 'hlc of the op that set state',
  pos_ts BIGINT UNSIGNED NOT NULL COMMENT 'hlc of the op that set position',
  pos_set TINYINT UNSIGNED NOT NULL COMMENT '1 if that op was a positioning op',
  prev_state TINYINT UNSIGNED NOT NULL DEFAULT 255 COMMENT 'state before the last merging upsert (255: it inserted the row)',
  PRIMARY KEY (graph, node_id, direction, other_id),
  KEY by_position (graph, node_id, direction, state, position, other_id),
  KEY by_other (graph, other_id) COMMENT 'the rows of a node op whose other endpoint is the node'
) ENGINE=InnoDB)";

constexpr std::string_view add_prev_state_sql =
    "ALTER TABLE edges ADD COLUMN IF NOT EXISTS prev_state TINYINT UNSIGNED NOT NULL DEFAULT 255"
    " COMMENT 'state before the last merging upsert (255: it inserted the row)'";

// The registers of whole-node ops per node and direction, on every shard (see
// core::node_registers).
constexpr std::string_view create_node_registers_sql = R"(CREATE TABLE IF NOT EXISTS node_registers (
  graph VARBINARY(32) NOT NULL,
  node_id BIGINT NOT NULL,
  direction TINYINT UNSIGNED NOT NULL COMMENT '0: the node''s outgoing edges, 1: its incoming edges',
  removed_ts BIGINT UNSIGNED NOT NULL COMMENT 'greatest ts of a remove, 0: none',
  action_ts BIGINT UNSIGNED NOT NULL COMMENT 'ts of the latest node action, 0: none',
  action TINYINT UNSIGNED NOT NULL COMMENT 'that action: 0 remove, 1 archive, 2 unarchive (restore), 3 negate',
  PRIMARY KEY (graph, node_id, direction)
) ENGINE=InnoDB)";

constexpr std::string_view create_counts_sql = R"(CREATE TABLE IF NOT EXISTS edge_counts (
  graph VARBINARY(32) NOT NULL,
  node_id BIGINT NOT NULL,
  direction TINYINT UNSIGNED NOT NULL,
  state TINYINT UNSIGNED NOT NULL,
  count BIGINT NOT NULL,
  PRIMARY KEY (graph, node_id, direction, state)
) ENGINE=InnoDB)";

constexpr std::string_view row_columns = "graph, node_id, direction, other_id, state, position, ts, pos_ts, pos_set";

// Graph names are validated to [A-Za-z0-9_]{1,32} before they reach the journal, so they
// need no escaping; the assert pairs that check with this use.
void append_graph(std::string& sql, std::string_view graph) {
    CAIRN_ASSERT(core::valid_graph_name(graph));
    sql += '\'';
    sql += graph;
    sql += '\'';
}

// A read of a shard whose edge tables do not exist yet: the apply worker creates them when it
// starts, beside serving, so a read on a fresh database may come first. Nothing was applied there,
// so such a read answers empty (no rows, counts 0) instead of failing.

// Decimal text of an integer, appended (the apply path builds statements of thousands of rows).
template <class Int>
void append_int(std::string& sql, Int v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    sql.append(buf, r.ptr);
}

void append_key_tuple(std::string& sql, const edge_row_key& k) {
    sql += '(';
    append_graph(sql, k.graph);
    fmt::format_to(std::back_inserter(sql), ",{},{},{})", k.node_id, static_cast<int>(k.direction), k.other_id);
}

stored_edge parse_row(const rows& r, std::size_t i) {
    stored_edge e;
    e.key.graph = std::string(*r.at(i, 0));
    e.key.node_id = r.int64_at(i, 1);
    e.key.direction = static_cast<edge_direction>(r.uint64_at(i, 2));
    e.key.other_id = r.int64_at(i, 3);
    e.row.state = static_cast<core::edge_state>(r.uint64_at(i, 4));
    e.row.position = r.int64_at(i, 5);
    e.row.ts = r.uint64_at(i, 6);
    e.row.pos_ts = r.uint64_at(i, 7);
    e.row.pos_set = r.uint64_at(i, 8) != 0;
    return e;
}

edge_row_key key_of(const core::edge_op& e, edge_direction d) {
    if (d == edge_direction::forward) return {e.graph, e.source_id, d, e.destination_id};
    return {e.graph, e.destination_id, d, e.source_id};
}

}  // namespace

std::vector<std::pair<core::shard_index, edge_row_key>> edge_rows_of(const core::edge_op& e, const core::shard_map& map) {
    return {{map.shard_of_id(e.source_id), key_of(e, edge_direction::forward)},
            {map.shard_of_id(e.destination_id), key_of(e, edge_direction::backward)}};
}

namespace {
asio::awaitable<core::result<void>> async_migrate_node_states(mariadb_conn& conn);
}  // namespace

asio::awaitable<core::result<void>> async_create_edge_schema(mariadb_conn& conn) {
    if (auto r = co_await conn.async_execute(create_edges_sql); !r) co_return r;
    // Tables made before prev_state existed gain it (an instant ALTER in MariaDB 10.3+).
    if (auto r = co_await conn.async_execute(add_prev_state_sql); !r) co_return r;
    if (auto r = co_await conn.async_execute(create_node_registers_sql); !r) co_return r;
    if (auto r = co_await conn.async_execute(create_counts_sql); !r) co_return r;
    co_return co_await async_migrate_node_states(conn);
}

namespace {

using node_key = std::pair<std::string, std::int64_t>;
// (graph, node_id, direction): the registers of one direction of a node.
using register_key = std::tuple<std::string, std::int64_t, int>;
using register_map = std::map<register_key, core::node_registers>;

// The rows one transaction of a node op recomputes at most: a node may have millions of edges.
constexpr std::size_t node_chunk_rows = 1000;

core::node_registers registers_of(const register_map& regs, const std::string& graph, std::int64_t node, int direction) {
    const auto it = regs.find({graph, node, direction});
    return it == regs.end() ? core::node_registers{} : it->second;
}

// The two registers that face a row: its own node's in the row's direction, and the other
// end's in the other direction (for s→d: s's forward and d's backward, on both rows).
bool has_facing_registers(const register_map& regs, const edge_row_key& key) {
    const int dir = static_cast<int>(key.direction);
    return regs.contains({key.graph, key.node_id, dir}) || regs.contains({key.graph, key.other_id, 1 - dir});
}

core::edge_state effective_state(const register_map& regs, const edge_row_key& key, const core::edge_row& own) {
    const int dir = static_cast<int>(key.direction);
    return core::edge_effective_state(own, registers_of(regs, key.graph, key.node_id, dir),
                                      registers_of(regs, key.graph, key.other_id, 1 - dir));
}

core::node_registers registers_from(const rows& r, std::size_t i, std::size_t first_column) {
    const auto action = core::node_action_from_code(r.uint64_at(i, first_column + 2));
    return core::node_registers{r.uint64_at(i, first_column), r.uint64_at(i, first_column + 1),
                                action.value_or(core::node_action::unarchive)};
}

// The registers of `nodes`, both directions (absent: never written), read with `lock` (" FOR
// UPDATE" or " LOCK IN SHARE MODE": a locking read also locks the gap of an absent node, so a
// node op and an edge op on the same shard serialize on the registers).
asio::awaitable<core::result<register_map>> async_read_registers(mariadb_conn& conn, const std::set<node_key>& nodes,
                                                                 std::string_view lock) {
    register_map out;
    if (nodes.empty()) co_return out;
    // One `graph = g AND node_id IN (...)` term per graph, not row constructors: MariaDB plans
    // an IN list of constants on one key part far faster (2.4 ms against 9 ms for 2,000 nodes,
    // measured on the drain's batches), and it locks the same records and gaps.
    std::string sql =
        "SELECT graph, node_id, direction, removed_ts, action_ts, action FROM node_registers FORCE INDEX (PRIMARY) WHERE ";
    sql.reserve(sql.size() + nodes.size() * 21 + 64);
    const std::string* graph = nullptr;
    for (const auto& [g, node] : nodes) {  // sorted by graph, then node
        if (!graph || *graph != g) {
            if (graph) sql += ")) OR ";
            sql += "(graph = ";
            append_graph(sql, g);
            sql += " AND node_id IN (";
            graph = &g;
        } else {
            sql += ',';
        }
        fmt::format_to(std::back_inserter(sql), "{}", node);
    }
    sql += "))";
    sql += lock;
    auto r = co_await conn.async_query(sql);
    if (!r) co_return r.error();
    for (std::size_t i = 0; i < r.value().size(); ++i) {
        out[{std::string(*r.value().at(i, 0)), r.value().int64_at(i, 1), static_cast<int>(r.value().uint64_at(i, 2))}] =
            registers_from(r.value(), i, 3);
    }
    co_return out;
}

// Writes registers (statements of the caller's transaction).
asio::awaitable<core::result<void>> async_write_registers(mariadb_conn& conn,
                                                          const std::vector<std::pair<register_key, core::node_registers>>& regs) {
    if (regs.empty()) co_return core::success();
    std::string upsert = "INSERT INTO node_registers (graph, node_id, direction, removed_ts, action_ts, action) VALUES ";
    for (std::size_t i = 0; i < regs.size(); ++i) {
        const auto& [key, r] = regs[i];
        upsert += i ? ",(" : "(";
        append_graph(upsert, std::get<0>(key));
        fmt::format_to(std::back_inserter(upsert), ",{},{},{},{},{})", std::get<1>(key), std::get<2>(key), r.removed_ts,
                       r.action_ts, static_cast<int>(r.action));
    }
    upsert += " ON DUPLICATE KEY UPDATE removed_ts = VALUES(removed_ts), action_ts = VALUES(action_ts), action = VALUES(action)";
    co_return co_await conn.async_execute(upsert);
}

// Whether any node of `graph` has registers on this shard, by a locking read of the graph's
// first register: when there is none, the next-key lock on the empty range blocks the insert
// of any register of the graph until the caller's transaction ends.
asio::awaitable<core::result<bool>> async_graph_has_registers(mariadb_conn& conn, std::string_view graph) {
    std::string sql = "SELECT node_id FROM node_registers FORCE INDEX (PRIMARY) WHERE graph = ";
    append_graph(sql, graph);
    sql += " ORDER BY graph, node_id, direction LIMIT 1 LOCK IN SHARE MODE";
    auto r = co_await conn.async_query(sql);
    if (!r) co_return r.error();
    co_return r.value().size() > 0;
}

// One row to write: its own values and its effective state.
struct row_write {
    edge_row_key key;
    core::edge_row own;
    core::edge_state effective = core::edge_state::normal;
};

// The orders in which a transaction writes, and so locks, edge rows and count rows: every
// transaction of every gateway uses them, so concurrent appliers lock in one order. The
// integers come first: a batch's rows nearly all share one graph, whose name would otherwise
// be compared at every step of the sort.
bool row_order(const edge_row_key& a, const edge_row_key& b) {
    if (a.node_id != b.node_id) return a.node_id < b.node_id;
    if (a.other_id != b.other_id) return a.other_id < b.other_id;
    if (a.direction != b.direction) return a.direction < b.direction;
    return a.graph < b.graph;
}

bool count_order(const edge_count_key& a, const edge_count_key& b) {
    if (a.node_id != b.node_id) return a.node_id < b.node_id;
    if (a.direction != b.direction) return a.direction < b.direction;
    if (a.state != b.state) return a.state < b.state;
    return a.graph < b.graph;
}

// Count changes of one transaction, gathered unsorted and summed per count row at the end.
class count_deltas {
public:
    void add(const edge_row_key& k, core::edge_state state, std::int64_t delta) {
        items_.emplace_back(edge_count_key{k.graph, k.node_id, k.direction, state}, delta);
    }
    // Sorted by count_order (the order every transaction locks them in), summed, zeros left out.
    std::vector<std::pair<edge_count_key, std::int64_t>> summed() {
        std::sort(items_.begin(), items_.end(), [](const auto& a, const auto& b) { return count_order(a.first, b.first); });
        std::vector<std::pair<edge_count_key, std::int64_t>> out;
        for (auto& item : items_) {
            if (!out.empty() && out.back().first == item.first) {
                out.back().second += item.second;
            } else {
                if (!out.empty() && out.back().second == 0) out.pop_back();
                out.push_back(std::move(item));
            }
        }
        if (!out.empty() && out.back().second == 0) out.pop_back();
        items_.clear();
        return out;
    }

private:
    std::vector<std::pair<edge_count_key, std::int64_t>> items_;
};

// The apply path's multi-row statements run as prepared statements with integer parameters in
// the binary protocol: sent as text, a drain's statements cost the shard more to lex and parse
// (MYSQLparse and the lexer, a quarter of mariadbd's samples) than to apply. Rows go in chunks
// of apply_chunk_rows_max while enough remain, then the powers of two of the rest, largest first,
// so a connection keeps at most 11 texts of each statement prepared.
constexpr std::size_t apply_chunk_rows_max = 1024;

std::size_t next_chunk_rows(std::size_t remaining) {
    CAIRN_ASSERT(remaining > 0);
    return remaining >= apply_chunk_rows_max ? apply_chunk_rows_max : std::bit_floor(remaining);
}

// The texts of one multi-row statement, index k for 2^k rows: head, the rows' groups of
// `columns` placeholders, tail.
std::vector<std::string> chunk_texts(std::string_view head, std::size_t columns, std::string_view tail) {
    std::string group = "(";
    for (std::size_t c = 0; c < columns; ++c) group += c ? ",?" : "?";
    group += ')';
    std::vector<std::string> out;
    for (std::size_t n = 1; n <= apply_chunk_rows_max; n *= 2) {
        std::string sql;
        sql.reserve(head.size() + n * (group.size() + 1) + tail.size());
        sql += head;
        for (std::size_t i = 0; i < n; ++i) {
            if (i) sql += ',';
            sql += group;
        }
        sql += tail;
        out.push_back(std::move(sql));
    }
    return out;
}

const std::string& chunk_text(const std::vector<std::string>& texts, std::size_t rows) {
    CAIRN_ASSERT(std::has_single_bit(rows) && rows <= apply_chunk_rows_max);
    return texts.at(static_cast<std::size_t>(std::countr_zero(rows)));
}

// key, effective state, position, ts, pos_ts, pos_set, own state: the values of row_columns
// and own_state, as parameters.
void push_row_params(std::vector<sql_param>& params, const edge_row_key& key, const core::edge_row& own,
                     core::edge_state effective) {
    params.emplace_back(std::string_view(key.graph));
    params.emplace_back(key.node_id);
    params.emplace_back(std::int64_t{static_cast<int>(key.direction)});
    params.emplace_back(key.other_id);
    params.emplace_back(std::int64_t{static_cast<int>(effective)});
    params.emplace_back(own.position);
    params.emplace_back(own.ts);
    params.emplace_back(own.pos_ts);
    params.emplace_back(std::int64_t{own.pos_set ? 1 : 0});
    params.emplace_back(std::int64_t{static_cast<int>(own.state)});
}
constexpr std::size_t row_params = 10;

// Runs one prepared multi-row statement over rows [0, total) in chunks (next_chunk_rows):
// push_row(params, i) adds row i's `columns` parameters, on_chunk(from, n, rows) sees each
// chunk's result. Stops at the first error.
template <class PushRow, class OnChunk>
asio::awaitable<core::result<void>> async_run_chunks(mariadb_conn& conn, const std::vector<std::string>& texts,
                                                     std::size_t total, std::size_t columns, PushRow push_row,
                                                     OnChunk on_chunk) {
    std::vector<sql_param> params;
    for (std::size_t from = 0; from < total;) {
        const std::size_t n = next_chunk_rows(total - from);
        params.clear();
        params.reserve(n * columns);
        for (std::size_t i = from; i < from + n; ++i) push_row(params, i);
        CAIRN_ASSERT(params.size() == n * columns);
        auto r = co_await conn.async_query_prepared(chunk_text(texts, n), params);
        if (!r) co_return r.error();
        if (auto c = on_chunk(from, n, r.value()); !c) co_return c;
        from += n;
    }
    co_return core::success();
}

// on_chunk for statements whose result is not read.
core::result<void> ignore_chunk(std::size_t, std::size_t, const rows&) { return core::success(); }

// Writes rows and count deltas (statements of the caller's transaction).
asio::awaitable<core::result<void>> async_write_rows(mariadb_conn& conn, const std::vector<row_write>& writes,
                                                     count_deltas& deltas) {
    static const std::vector<std::string> upsert_texts = chunk_texts(
        fmt::format("INSERT INTO edges ({}, own_state) VALUES ", row_columns), row_params,
        " ON DUPLICATE KEY UPDATE state = VALUES(state), position = VALUES(position), ts = VALUES(ts),"
        " pos_ts = VALUES(pos_ts), pos_set = VALUES(pos_set), own_state = VALUES(own_state)");
    static const std::vector<std::string> count_texts =
        chunk_texts("INSERT INTO edge_counts (graph, node_id, direction, state, count) VALUES ", 5,
                    " ON DUPLICATE KEY UPDATE count = count + VALUES(count)");
    if (auto r = co_await async_run_chunks(
            conn, upsert_texts, writes.size(), row_params,
            [&writes](std::vector<sql_param>& params, std::size_t i) {
                push_row_params(params, writes[i].key, writes[i].own, writes[i].effective);
            },
            ignore_chunk);
        !r) {
        co_return r;
    }
    const auto summed = deltas.summed();
    co_return co_await async_run_chunks(
        conn, count_texts, summed.size(), 5,
        [&summed](std::vector<sql_param>& params, std::size_t i) {
            const auto& [ck, delta] = summed[i];
            params.emplace_back(std::string_view(ck.graph));
            params.emplace_back(ck.node_id);
            params.emplace_back(std::int64_t{static_cast<int>(ck.direction)});
            params.emplace_back(std::int64_t{static_cast<int>(ck.state)});
            params.emplace_back(delta);
        },
        ignore_chunk);
}

// Merges `rows` (each the join of its ops, keys in row_order and unique) into the edges table on the
// shard itself, for rows whose endpoints have no node registers (effective state = own state),
// and adds their count deltas. The upsert applies core::edge_merge's rule in SQL and reports each
// row's state before and after (prev_state: its default 255 when it inserted the row). The
// assignments run left to right, each seeing the columns already assigned: within a
// lexicographic tuple the least significant column goes first, and every later comparison with
// the new values stays true exactly when the incoming tuple won.
asio::awaitable<core::result<void>> async_merge_plain_rows(mariadb_conn& conn,
                                                           const std::vector<std::pair<edge_row_key, core::edge_row>>& rows,
                                                           count_deltas& deltas) {
    static_assert(static_cast<int>(core::edge_state::normal) == 0 && static_cast<int>(core::edge_state::removed) == 1 &&
                      static_cast<int>(core::edge_state::archived) == 2 && static_cast<int>(core::edge_state::negative) == 3,
                  "the SQL rank (4 - state) MOD 4 is core::edge_state_rank");
    static const std::vector<std::string> texts = chunk_texts(
        fmt::format("INSERT INTO edges ({}, own_state) VALUES ", row_columns), row_params,
        " ON DUPLICATE KEY UPDATE prev_state = state,"
        " own_state = IF((VALUES(ts), (4 - VALUES(own_state)) MOD 4) > (ts, (4 - own_state) MOD 4), VALUES(own_state), own_state),"
        " ts = GREATEST(ts, VALUES(ts)),"
        " state = own_state,"
        " position = IF((VALUES(pos_set), VALUES(pos_ts), VALUES(position)) > (pos_set, pos_ts, position), VALUES(position), position),"
        " pos_ts = IF((VALUES(pos_set), VALUES(pos_ts), VALUES(position)) > (pos_set, pos_ts, position), VALUES(pos_ts), pos_ts),"
        " pos_set = IF((VALUES(pos_set), VALUES(pos_ts), VALUES(position)) > (pos_set, pos_ts, position), VALUES(pos_set), pos_set)"
        " RETURNING graph, node_id, direction, other_id, prev_state, state");
    std::map<edge_row_key, std::size_t> by_key;  // only if RETURNING's order differs from VALUES'
    co_return co_await async_run_chunks(
        conn, texts, rows.size(), row_params,
        [&rows](std::vector<sql_param>& params, std::size_t i) {
            push_row_params(params, rows[i].first, rows[i].second, rows[i].second.state);
        },
        [&rows, &by_key, &deltas](std::size_t from, std::size_t n, const shards::rows& got) -> core::result<void> {
            const auto chunk = std::span(rows).subspan(from, n);
            // RETURNING lists the rows in the order of VALUES; each is still checked against its key
            // (and found by key if the order ever differed), so that no count goes to the wrong node.
            auto key_at = [&got](std::size_t i) {
                return edge_row_key{std::string(*got.at(i, 0)), got.int64_at(i, 1),
                                    static_cast<edge_direction>(got.uint64_at(i, 2)), got.int64_at(i, 3)};
            };
            auto same_key = [&got](std::size_t i, const edge_row_key& k) {
                return got.int64_at(i, 1) == k.node_id && got.int64_at(i, 3) == k.other_id &&
                       got.uint64_at(i, 2) == static_cast<std::uint64_t>(k.direction) && *got.at(i, 0) == k.graph;
            };
            by_key.clear();
            for (std::size_t want = 0; want < chunk.size(); ++want) {
                const auto& key = chunk[want].first;
                std::size_t i = want;
                if (i >= got.size() || !same_key(i, key)) {
                    if (by_key.empty()) {
                        for (std::size_t j = 0; j < got.size(); ++j) by_key.emplace(key_at(j), j);
                    }
                    const auto it = by_key.find(key);
                    if (it == by_key.end()) return core::errc::shard_rejected;  // never expected: a row back per row sent
                    i = it->second;
                }
                const auto prev = got.uint64_at(i, 4);
                const auto now = static_cast<core::edge_state>(got.uint64_at(i, 5));
                if (prev == 255) {
                    deltas.add(key, now, 1);
                } else if (prev != static_cast<std::uint64_t>(now)) {
                    deltas.add(key, static_cast<core::edge_state>(prev), -1);
                    deltas.add(key, now, 1);
                }
            }
            return core::success();
        });
}

// A locked row as the apply path needs it: own values and the stored effective state.
struct locked_row {
    core::edge_row own;
    core::edge_state effective = core::edge_state::normal;
};

constexpr std::string_view locked_columns = "graph, node_id, direction, other_id, state, position, ts, pos_ts, pos_set, own_state";

std::pair<edge_row_key, locked_row> parse_locked(const rows& r, std::size_t i) {
    stored_edge e = parse_row(r, i);
    locked_row out{e.row, e.row.state};
    out.own.state = static_cast<core::edge_state>(r.uint64_at(i, 9));
    return {std::move(e.key), out};
}

// Recomputes the effective state of `rows` (locked in this transaction) with the registers of
// their endpoints, and writes those that changed with their count deltas.
asio::awaitable<core::result<void>> async_recompute_rows(mariadb_conn& conn,
                                                         const std::vector<std::pair<edge_row_key, locked_row>>& rows) {
    std::set<node_key> nodes;
    for (const auto& [key, _] : rows) {
        nodes.insert({key.graph, key.node_id});
        nodes.insert({key.graph, key.other_id});
    }
    auto regs = co_await async_read_registers(conn, nodes, " LOCK IN SHARE MODE");
    if (!regs) co_return regs.error();
    std::vector<row_write> writes;
    count_deltas deltas;
    for (const auto& [key, row] : rows) {
        const auto eff = effective_state(regs.value(), key, row.own);
        if (eff == row.effective) continue;
        writes.push_back({key, row.own, eff});
        deltas.add(key, row.effective, -1);
        deltas.add(key, eff, 1);
    }
    co_return co_await async_write_rows(conn, writes, deltas);
}

// Which of a node's directions a recompute covers: bit 0 forward, bit 1 backward.
using direction_mask = unsigned;
constexpr direction_mask both_directions = 3;

// After a node op's registers are committed: recomputes the rows of the node on this shard that
// face the registers of the directions in `directions` — for forward, the node's own forward rows
// (node_id = node) and the backward rows of its edges at the other ends (other_id = node); for
// backward, the mirror — a chunk of node_chunk_rows per transaction, each chunk's counts exact in
// its own transaction. Interrupted part-way, the rows not reached yet keep their old effective
// state (with exact counts) until the op is applied again (the worker retries it: the op is not
// acknowledged before this returns), and a recompute is a pure function of rows and registers,
// so repeating it is harmless.
asio::awaitable<core::result<void>> async_recompute_node(mariadb_conn& conn, const node_key& node,
                                                         direction_mask directions) {
    CAIRN_ASSERT(directions != 0 && directions <= both_directions);
    const auto& [graph, id] = node;
    // With one direction d: own rows of direction d, and others' rows of the other direction.
    const std::string own_filter = directions == both_directions ? "" : fmt::format(" AND direction = {}", directions - 1);
    const std::string other_filter =
        directions == both_directions ? "" : fmt::format(" AND direction = {}", directions == 1 ? 1 : 0);
    for (const bool as_other : {false, true}) {
        // Cursor: (direction, other_id) for node_id = node; (node_id, direction) for other_id = node.
        std::optional<std::pair<std::int64_t, std::int64_t>> after;
        for (;;) {
            std::string sql = "SELECT ";
            sql += locked_columns;
            if (!as_other) {
                sql += " FROM edges FORCE INDEX (PRIMARY) WHERE graph = ";
                append_graph(sql, graph);
                fmt::format_to(std::back_inserter(sql), " AND node_id = {}", id);
                sql += own_filter;
                if (after) {
                    fmt::format_to(std::back_inserter(sql), " AND (direction > {0} OR (direction = {0} AND other_id > {1}))",
                                   after->first, after->second);
                }
                fmt::format_to(std::back_inserter(sql), " ORDER BY direction, other_id LIMIT {} FOR UPDATE", node_chunk_rows);
            } else {
                sql += " FROM edges FORCE INDEX (by_other) WHERE graph = ";
                append_graph(sql, graph);
                fmt::format_to(std::back_inserter(sql), " AND other_id = {}", id);
                sql += other_filter;
                if (after) {
                    fmt::format_to(std::back_inserter(sql), " AND (node_id > {0} OR (node_id = {0} AND direction > {1}))",
                                   after->first, after->second);
                }
                fmt::format_to(std::back_inserter(sql), " ORDER BY node_id, direction LIMIT {} FOR UPDATE", node_chunk_rows);
            }
            std::size_t got = 0;
            auto r = co_await async_in_transaction(conn, [&]() -> asio::awaitable<core::result<void>> {
                auto q = co_await conn.async_query(sql);
                if (!q) co_return q.error();
                std::vector<std::pair<edge_row_key, locked_row>> rows;
                for (std::size_t i = 0; i < q.value().size(); ++i) rows.push_back(parse_locked(q.value(), i));
                got = rows.size();
                if (rows.empty()) co_return core::success();
                const auto& last = rows.back().first;
                after = as_other ? std::pair{last.node_id, std::int64_t{static_cast<int>(last.direction)}}
                                 : std::pair{std::int64_t{static_cast<int>(last.direction)}, last.other_id};
                co_return co_await async_recompute_rows(conn, rows);
            });
            if (!r) co_return r;
            if (got < node_chunk_rows) break;
        }
    }
    co_return core::success();
}

// Registers written before issue 17 (node_states: one pair for both directions of a node, and a
// rule under which an edge write newer than an archive won over it) become node_registers rows of
// both directions, and every row of such a node is recomputed under the current rule. One node at
// a time: registers merged in, rows recomputed, then the old row deleted, so an interrupted
// migration resumes where it stopped (every step is idempotent); the old table is dropped once
// empty. Runs before the shard's worker applies anything (schema creation).
asio::awaitable<core::result<void>> async_migrate_node_states(mariadb_conn& conn) {
    // Nearly every start finds no old table: ask the catalogue rather than fail a query on it.
    auto exists = co_await conn.async_query(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'node_states'");
    if (!exists) co_return exists.error();
    if (exists.value().size() == 0) co_return core::success();
    std::size_t done = 0;
    for (;;) {
        auto old = co_await conn.async_query(
            "SELECT graph, node_id, removed_ts, archive_ts, archived FROM node_states ORDER BY graph, node_id LIMIT 100");
        if (!old) {
            if (tables_missing(conn)) co_return core::success();  // nothing to migrate (or done)
            co_return old.error();
        }
        if (old.value().size() == 0) break;
        for (std::size_t i = 0; i < old.value().size(); ++i) {
            const node_key n{std::string(*old.value().at(i, 0)), old.value().int64_at(i, 1)};
            core::node_registers carried;
            if (const auto removed_ts = old.value().uint64_at(i, 2)) carried = core::node_merge(carried, core::node_action::remove, removed_ts);
            if (const auto archive_ts = old.value().uint64_at(i, 3)) {
                carried = core::node_merge(
                    carried, old.value().uint64_at(i, 4) ? core::node_action::archive : core::node_action::unarchive, archive_ts);
            }
            const std::set<node_key> one{n};
            auto merged = co_await async_in_transaction(conn, [&]() -> asio::awaitable<core::result<void>> {
                auto regs = co_await async_read_registers(conn, one, " FOR UPDATE");
                if (!regs) co_return regs.error();
                std::vector<std::pair<register_key, core::node_registers>> out;
                for (int dir = 0; dir < 2; ++dir) {
                    auto r = registers_of(regs.value(), n.first, n.second, dir);
                    if (carried.removed_ts) r = core::node_merge(r, core::node_action::remove, carried.removed_ts);
                    if (carried.action_ts) r = core::node_merge(r, carried.action, carried.action_ts);
                    out.emplace_back(register_key{n.first, n.second, dir}, r);
                }
                co_return co_await async_write_registers(conn, out);
            });
            if (!merged) co_return merged;
            if (auto c = co_await async_recompute_node(conn, n, both_directions); !c) co_return c;
            std::string del = "DELETE FROM node_states WHERE graph = ";
            append_graph(del, n.first);
            fmt::format_to(std::back_inserter(del), " AND node_id = {}", n.second);
            if (auto d = co_await conn.async_execute(del); !d) co_return d;
            if (++done % 1000 == 0) spdlog::info("node registers: {} nodes moved to per-direction registers so far", done);
        }
    }
    if (auto d = co_await conn.async_execute("DROP TABLE IF EXISTS node_states"); !d) co_return d;
    if (done > 0) spdlog::info("node registers: {} nodes moved to per-direction registers, their edges recomputed", done);
    co_return core::success();
}

}  // namespace

asio::awaitable<core::result<void>> async_apply_edges(mariadb_conn& conn, const core::shard_map& map,
                                                      core::shard_index shard,
                                                      std::span<const core::op* const> ops) {
    // The rows of this shard's edge ops, sorted in row_order so that every transaction locks rows in
    // the same order (fewer deadlocks between gateways), in runs of one key. Node ops touch
    // every shard (their registers are replicated).
    std::vector<std::pair<edge_row_key, const core::op*>> keyed;
    keyed.reserve(ops.size());
    std::map<register_key, std::vector<const core::op*>> by_node;  // by the directions they cover
    for (const core::op* o : ops) {
        if (const auto* n = std::get_if<core::node_op>(&o->body)) {
            if (n->scope != core::node_scope::backward) by_node[{n->graph, n->node_id, 0}].push_back(o);
            if (n->scope != core::node_scope::forward) by_node[{n->graph, n->node_id, 1}].push_back(o);
            continue;
        }
        const auto* e = std::get_if<core::edge_op>(&o->body);
        if (!e) continue;
        if (map.shard_of_id(e->source_id) == shard) keyed.emplace_back(key_of(*e, edge_direction::forward), o);
        if (map.shard_of_id(e->destination_id) == shard) keyed.emplace_back(key_of(*e, edge_direction::backward), o);
    }
    if (keyed.empty() && by_node.empty()) co_return core::success();
    std::sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& y) { return row_order(x.first, y.first); });
    struct key_run {
        std::size_t begin = 0;
        std::size_t end = 0;
    };
    std::vector<key_run> runs;
    for (std::size_t i = 0; i < keyed.size(); ++i) {
        if (runs.empty() || keyed[runs.back().begin].first != keyed[i].first) runs.push_back({i, i});
        runs.back().end = i + 1;
    }
    // The join of a run's ops onto `row`.
    auto fold = [&keyed](std::optional<core::edge_row> row, const key_run& run) {
        for (std::size_t i = run.begin; i < run.end; ++i) {
            row = core::edge_merge(row, std::get<core::edge_op>(keyed[i].second->body), keyed[i].second->ts);
        }
        CAIRN_ASSERT(row.has_value());
        return *row;
    };

    auto r = co_await async_in_transaction(conn, [&]() -> asio::awaitable<core::result<void>> {
        // 1. The node ops' registers (before the edge rows, which read them).
        if (!by_node.empty()) {
            std::set<node_key> nodes;
            for (const auto& [k, _] : by_node) nodes.insert({std::get<0>(k), std::get<1>(k)});
            auto regs = co_await async_read_registers(conn, nodes, " FOR UPDATE");
            if (!regs) co_return regs.error();
            std::vector<std::pair<register_key, core::node_registers>> changed;
            for (const auto& [k, node_ops] : by_node) {
                const auto before = registers_of(regs.value(), std::get<0>(k), std::get<1>(k), std::get<2>(k));
                auto after = before;
                for (const core::op* o : node_ops) after = core::node_merge(after, std::get<core::node_op>(o->body).action, o->ts);
                if (after != before) changed.emplace_back(k, after);
            }
            if (auto w = co_await async_write_registers(conn, changed); !w) co_return w;
        }
        if (runs.empty()) co_return core::success();

        // 2. The edge rows: registers of their endpoints, then the rows themselves. A graph
        // without any register on this shard (no node op ever: the common case) is found by one
        // locking probe of its key range, whose gap lock holds off a node op of the graph until
        // this transaction ends as the per-node read would; only a graph with registers has
        // its endpoints read one by one.
        std::vector<std::string_view> graphs;  // distinct, sorted: every transaction probes in one order
        for (const auto& run : runs) {
            const std::string_view g = keyed[run.begin].first.graph;
            if (std::find(graphs.begin(), graphs.end(), g) == graphs.end()) graphs.push_back(g);
        }
        std::sort(graphs.begin(), graphs.end());
        std::vector<std::string_view> held;  // the graphs with registers
        for (const std::string_view g : graphs) {
            auto any = co_await async_graph_has_registers(conn, g);
            if (!any) co_return any.error();
            if (any.value()) held.push_back(g);
        }
        std::set<node_key> endpoints;
        if (!held.empty()) {
            for (const auto& run : runs) {
                const auto& key = keyed[run.begin].first;
                if (std::find(held.begin(), held.end(), key.graph) == held.end()) continue;
                endpoints.insert({key.graph, key.node_id});
                endpoints.insert({key.graph, key.other_id});
            }
        }
        auto regs = co_await async_read_registers(conn, endpoints, " LOCK IN SHARE MODE");
        if (!regs) co_return regs.error();

        // A row neither of whose endpoints has ever had a node op (no registers: the common
        // case) has its own state as its effective state, before and after, so the shard can
        // merge it on its own: one upsert that reports each row's state before and after.
        // Rows under a node op take the locking read, where the effective state is worked
        // out here.
        count_deltas deltas;
        std::vector<std::pair<edge_row_key, core::edge_row>> plain;
        std::vector<key_run> registered;
        plain.reserve(runs.size());
        for (const auto& run : runs) {
            const auto& key = keyed[run.begin].first;
            const bool none = regs.value().empty() || !has_facing_registers(regs.value(), key);
            if (none) {
                plain.emplace_back(key, fold(std::nullopt, run));
            } else {
                registered.push_back(run);
            }
        }
        if (auto m = co_await async_merge_plain_rows(conn, plain, deltas); !m) co_return m;
        if (registered.empty()) {
            const std::vector<row_write> none;
            co_return co_await async_write_rows(conn, none, deltas);
        }

        std::string sql;
        sql.reserve(64 + registered.size() * 48);
        sql += "SELECT ";
        sql += locked_columns;
        // FORCE INDEX: with hundreds of row-constructor tuples MariaDB 10.11 spends seconds in
        // "Statistics" weighing the by_position index (1.9 s vs 0.04 s for 750 keys, measured by
        // cairn-bench's drain scenario); the primary key is always the right access path here.
        sql += " FROM edges FORCE INDEX (PRIMARY) WHERE (graph, node_id, direction, other_id) IN (";
        bool first = true;
        for (const auto& run : registered) {
            if (!first) sql += ',';
            first = false;
            append_key_tuple(sql, keyed[run.begin].first);
        }
        sql += ") FOR UPDATE";
        auto current = co_await conn.async_query(sql);
        if (!current) co_return current.error();
        std::map<edge_row_key, locked_row> existing;
        for (std::size_t i = 0; i < current.value().size(); ++i) existing.insert(parse_locked(current.value(), i));

        // Fold every op onto its row; a row is written and counted only if it really changed.
        std::vector<row_write> writes;
        for (const auto& run : registered) {
            const auto& key = keyed[run.begin].first;
            const auto it = existing.find(key);
            std::optional<core::edge_row> before;
            if (it != existing.end()) before = it->second.own;
            const std::optional<core::edge_row> after = fold(before, run);
            const auto eff = effective_state(regs.value(), key, *after);
            const bool had = it != existing.end();
            if (had && before == after && it->second.effective == eff) continue;
            writes.push_back({key, *after, eff});
            if (!had || it->second.effective != eff) {
                if (had) deltas.add(key, it->second.effective, -1);
                deltas.add(key, eff, 1);
            }
        }
        co_return co_await async_write_rows(conn, writes, deltas);
    });
    if (!r) co_return r;

    // 3. The rows that face the registers the node ops changed, in chunks of their own
    // transactions: a one-direction op leaves the node's other rows alone.
    std::map<node_key, direction_mask> recompute;
    for (const auto& [k, _] : by_node) recompute[{std::get<0>(k), std::get<1>(k)}] |= 1u << std::get<2>(k);
    for (const auto& [n, directions] : recompute) {
        if (auto c = co_await async_recompute_node(conn, n, directions); !c) co_return c;
    }
    co_return core::success();
}

asio::awaitable<core::result<std::optional<stored_edge>>> async_get_edge(mariadb_conn& conn, std::string_view graph,
                                                                        std::int64_t source_id,
                                                                        std::int64_t destination_id) {
    std::string sql = "SELECT ";
    sql += row_columns;
    sql += " FROM edges WHERE (graph, node_id, direction, other_id) = ";
    append_key_tuple(sql, {std::string(graph), source_id, edge_direction::forward, destination_id});
    auto r = co_await conn.async_query(sql);
    if (!r) co_return r.error();
    if (r.value().size() == 0) co_return std::optional<stored_edge>{};
    co_return std::optional<stored_edge>{parse_row(r.value(), 0)};
}

page_statement page_edges_statement(const edge_page_request& req) {
    CAIRN_ASSERT(req.limit >= 1);
    CAIRN_ASSERT(core::valid_graph_name(req.graph));
    CAIRN_ASSERT(req.other_ids.size() <= page_other_ids_max);
    page_statement st;
    const auto states = req.states.list();
    CAIRN_ASSERT(!states.empty());
    const bool backwards = req.cursor && req.cursor->which == core::page_cursor::kind::previous;
    // A previous page reads upwards from its cursor; the caller reverses the rows.
    const std::string_view order = backwards ? " ORDER BY position ASC, other_id ASC LIMIT ?" : " ORDER BY position DESC, other_id DESC LIMIT ?";
    // The WHERE of one range read: the node, direction and state(s), the ids, the cursor.
    const auto where = [&](std::string& sql, std::span<const core::edge_state> in_states) {
        sql += " WHERE graph = ? AND node_id = ? AND direction = ? AND state ";
        st.params.emplace_back(std::string_view(req.graph));
        st.params.emplace_back(req.node_id);
        st.params.emplace_back(std::int64_t{static_cast<int>(req.direction)});
        if (in_states.size() == 1) {
            sql += "= ?";
        } else {
            sql += "IN (";
            for (std::size_t i = 0; i < in_states.size(); ++i) sql += i ? ",?" : "?";
            sql += ')';
        }
        for (const auto s : in_states) st.params.emplace_back(std::int64_t{static_cast<int>(s)});
        if (!req.other_ids.empty()) {
            std::size_t n = 1;
            while (n < req.other_ids.size()) n *= 2;
            sql += " AND other_id IN (";
            for (std::size_t i = 0; i < n; ++i) {
                sql += i ? ",?" : "?";
                st.params.emplace_back(req.other_ids[std::min(i, req.other_ids.size() - 1)]);
            }
            sql += ')';
        }
        // The OR form, not a row comparison: MariaDB turns it into a range on all six key parts,
        // while (position, other_id) < (p, o) only uses the four equalities.
        if (req.cursor) {
            sql += backwards ? " AND (position > ? OR (position = ? AND other_id > ?))"
                             : " AND (position < ? OR (position = ? AND other_id < ?))";
            st.params.emplace_back(req.cursor->position);
            st.params.emplace_back(req.cursor->position);
            st.params.emplace_back(req.cursor->other_id);
        }
    };
    if (states.size() == 1 || !req.other_ids.empty()) {
        st.sql = "SELECT ";
        st.sql += row_columns;
        // FORCE INDEX: on a small or skewed table the optimizer may prefer the primary key and a
        // filesort; a page must stay one range read of by_position whatever the statistics say.
        // Among given other ends it is the other way round: one primary-key lookup per id (any
        // number of states is then a filter on the looked-up rows).
        st.sql += req.other_ids.empty() ? " FROM edges FORCE INDEX (by_position)" : " FROM edges FORCE INDEX (PRIMARY)";
        where(st.sql, states);
    } else {
        // Several states: by_position orders each state's rows apart, so one range read per
        // state, each cut at limit + 1 rows, merged by the outer ORDER BY: at most
        // states * (limit + 1) rows read, however many edges the node has.
        for (std::size_t i = 0; i < states.size(); ++i) {
            st.sql += i ? " UNION ALL (SELECT " : "(SELECT ";
            st.sql += row_columns;
            st.sql += " FROM edges FORCE INDEX (by_position)";
            where(st.sql, std::span<const core::edge_state>(&states[i], 1));
            st.sql += order;
            st.sql += ')';
            st.params.emplace_back(static_cast<std::uint64_t>(req.limit + 1));
        }
    }
    st.sql += order;
    st.params.emplace_back(static_cast<std::uint64_t>(req.limit + 1));
    return st;
}

asio::awaitable<core::result<edge_page>> async_page_edges(mariadb_conn& conn, edge_page_request req) {
    using kind = core::page_cursor::kind;
    const page_statement st = page_edges_statement(req);
    auto r = co_await conn.async_query_prepared(st.sql, st.params);
    if (!r) {
        if (tables_missing(conn)) co_return edge_page{};
        co_return r.error();
    }
    const rows& got = r.value();
    const bool more = got.size() > req.limit;  // a row beyond this page exists in read order
    const std::size_t n = more ? req.limit : got.size();
    edge_page page;
    page.edges.reserve(n);
    for (std::size_t i = 0; i < n; ++i) page.edges.push_back(parse_row(got, i));
    const bool backwards = req.cursor && req.cursor->which == kind::previous;
    if (backwards) std::reverse(page.edges.begin(), page.edges.end());

    auto cursor_at = [](kind k, const stored_edge& e) { return core::page_cursor{k, e.row.position, e.key.other_id}; };
    if (page.edges.empty()) {
        // Nothing on this side of the cursor (any more). The way back must include the
        // cursor's own key, which the page that made the cursor showed: ids are integers, so
        // "at or after (p, o)" is "after (p, o - 1)" (and "at or before" is "before (p, o + 1)").
        if (req.cursor && !backwards && req.cursor->other_id > std::numeric_limits<std::int64_t>::min()) {
            page.previous = core::page_cursor{kind::previous, req.cursor->position, req.cursor->other_id - 1};
        }
        if (backwards && req.cursor->other_id < std::numeric_limits<std::int64_t>::max()) {
            page.next = core::page_cursor{kind::next, req.cursor->position, req.cursor->other_id + 1};
        }
        co_return page;
    }
    if (backwards) {
        if (more) page.previous = cursor_at(kind::previous, page.edges.front());
        page.next = cursor_at(kind::next, page.edges.back());
    } else {
        if (more) page.next = cursor_at(kind::next, page.edges.back());
        // A page reached by a next cursor has the rows of the page that made it before it.
        if (req.cursor) page.previous = cursor_at(kind::previous, page.edges.front());
    }
    co_return page;
}

asio::awaitable<core::result<std::vector<std::int64_t>>> async_scan_other_ids(
    mariadb_conn& conn, std::string graph, std::int64_t node_id, edge_direction direction, core::edge_state_set states,
    std::optional<std::int64_t> after, std::size_t limit, bool descending) {
    std::string sql = "SELECT other_id FROM edges FORCE INDEX (PRIMARY) WHERE graph = ";
    append_graph(sql, graph);
    fmt::format_to(std::back_inserter(sql), " AND node_id = {} AND direction = {}", node_id, static_cast<int>(direction));
    if (after) fmt::format_to(std::back_inserter(sql), " AND other_id {} {}", descending ? '<' : '>', *after);
    sql += " AND state IN (";
    const auto list = states.list();
    for (std::size_t i = 0; i < list.size(); ++i) fmt::format_to(std::back_inserter(sql), "{}{}", i ? "," : "", static_cast<int>(list[i]));
    fmt::format_to(std::back_inserter(sql), ") ORDER BY other_id{} LIMIT {}", descending ? " DESC" : "", limit);
    auto r = co_await conn.async_query(sql);
    if (!r) {
        if (tables_missing(conn)) co_return std::vector<std::int64_t>{};
        co_return r.error();
    }
    std::vector<std::int64_t> out;
    out.reserve(r.value().size());
    for (std::size_t i = 0; i < r.value().size(); ++i) out.push_back(r.value().int64_at(i, 0));
    co_return out;
}

asio::awaitable<core::result<std::vector<std::int64_t>>> async_count_many(mariadb_conn& conn, std::string graph,
                                                                          std::span<const node_count_key> keys) {
    std::vector<std::int64_t> out(keys.size(), 0);
    if (keys.empty()) co_return out;
    std::string sql = "SELECT node_id, direction, state, count FROM edge_counts FORCE INDEX (PRIMARY) WHERE graph = ";
    append_graph(sql, graph);
    sql += " AND (node_id, direction, state) IN (";
    for (std::size_t i = 0; i < keys.size(); ++i) {
        sql += i ? ",(" : "(";
        append_int(sql, keys[i].node_id);
        sql += ',';
        append_int(sql, static_cast<int>(keys[i].direction));
        sql += ',';
        append_int(sql, static_cast<int>(keys[i].state));
        sql += ')';
    }
    sql += ')';
    auto r = co_await conn.async_query(sql);
    if (!r) {
        if (tables_missing(conn)) co_return out;
        co_return r.error();
    }
    const auto& rows = r.value();
    // Keys in any order, a key given twice too (up to batch_ops_max of them): positions sorted by
    // key, so each row finds its keys by binary search.
    std::vector<std::size_t> by_key(keys.size());
    for (std::size_t j = 0; j < keys.size(); ++j) by_key[j] = j;
    std::sort(by_key.begin(), by_key.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const node_count_key k{rows.int64_at(i, 0), static_cast<edge_direction>(rows.int64_at(i, 1)),
                               static_cast<core::edge_state>(rows.int64_at(i, 2))};
        auto at = std::lower_bound(by_key.begin(), by_key.end(), k, [&](std::size_t j, const node_count_key& v) { return keys[j] < v; });
        for (; at != by_key.end() && keys[*at] == k; ++at) out[*at] = rows.int64_at(i, 3);
    }
    co_return out;
}

asio::awaitable<core::result<std::vector<node_record>>> async_node_records(mariadb_conn& conn, std::string graph,
                                                                          std::span<const std::int64_t> node_ids) {
    std::vector<node_record> out(node_ids.size());
    if (node_ids.empty()) co_return out;
    std::vector<std::int64_t> ids(node_ids.begin(), node_ids.end());
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::string in;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i) in += ',';
        append_int(in, ids[i]);
    }
    // One statement: the registers (kind 0) and the count rows (kind 1) of every node asked.
    std::string sql =
        "SELECT 0, node_id, direction, removed_ts, action_ts, action FROM node_registers FORCE INDEX (PRIMARY) WHERE graph = ";
    append_graph(sql, graph);
    sql += " AND node_id IN (" + in + ") UNION ALL SELECT 1, node_id, direction, state, count, 0 FROM edge_counts FORCE INDEX (PRIMARY) WHERE graph = ";
    append_graph(sql, graph);
    sql += " AND node_id IN (" + in + ")";
    auto r = co_await conn.async_query(sql);
    if (!r) {
        if (tables_missing(conn)) co_return out;  // nothing applied yet: no node is known
        co_return r.error();
    }
    std::vector<node_record> by_id(ids.size());
    const auto& rows = r.value();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto at = std::lower_bound(ids.begin(), ids.end(), rows.int64_at(i, 1));
        if (at == ids.end() || *at != rows.int64_at(i, 1)) continue;
        auto& rec = by_id[static_cast<std::size_t>(at - ids.begin())];
        rec.known = true;
        if (rows.int64_at(i, 0) == 0) {
            const auto direction = rows.uint64_at(i, 2);
            if (direction < 2) rec.registers[direction] = registers_from(rows, i, 3);
        } else {
            const auto direction = rows.uint64_at(i, 2);
            const auto state = rows.uint64_at(i, 3);
            if (direction < 2 && state < 4) rec.counts[direction][state] = rows.int64_at(i, 4);
        }
    }
    for (std::size_t i = 0; i < node_ids.size(); ++i) {
        out[i] = by_id[static_cast<std::size_t>(std::lower_bound(ids.begin(), ids.end(), node_ids[i]) - ids.begin())];
    }
    co_return out;
}

namespace {

// Keys of one multi-get statement at most; statements are prepared for 1, 2, 4, ... of them
// (a shorter list repeats its last key), so that a shard holds a handful of prepared texts.
constexpr std::size_t multi_get_keys_max = 128;

const std::string& multi_get_sql(std::size_t keys) {
    static const std::vector<std::string> texts = [] {
        std::vector<std::string> out;
        for (std::size_t n = 1; n <= multi_get_keys_max; n *= 2) {
            std::string sql = "SELECT ";
            sql += row_columns;
            // FORCE INDEX: with many row-constructor tuples MariaDB 10.11 can spend far longer
            // weighing by_position than reading; the primary key is always the access path.
            sql += " FROM edges FORCE INDEX (PRIMARY) WHERE (graph, node_id, direction, other_id) IN (";
            for (std::size_t i = 0; i < n; ++i) sql += i ? ",(?,?,0,?)" : "(?,?,0,?)";
            sql += ')';
            out.push_back(std::move(sql));
        }
        return out;
    }();
    std::size_t index = 0;
    while ((std::size_t{1} << index) < keys) ++index;
    return texts.at(index);
}

}  // namespace

asio::awaitable<core::result<std::vector<std::optional<core::edge_row>>>> async_multi_get(
    mariadb_conn& conn, std::string graph, std::span<const std::pair<std::int64_t, std::int64_t>> keys) {
    static_assert(static_cast<int>(edge_direction::forward) == 0, "multi_get_sql reads forward rows");
    std::vector<std::optional<core::edge_row>> out(keys.size());
    std::map<std::pair<std::int64_t, std::int64_t>, core::edge_row> found;
    std::vector<sql_param> params;
    for (std::size_t from = 0; from < keys.size(); from += multi_get_keys_max) {
        const auto chunk = keys.subspan(from, std::min(multi_get_keys_max, keys.size() - from));
        const std::string& sql = multi_get_sql(chunk.size());
        const std::size_t slots = std::size_t{1} << static_cast<std::size_t>(std::bit_width(chunk.size() - 1));
        params.clear();
        for (std::size_t i = 0; i < slots; ++i) {
            const auto& k = chunk[std::min(i, chunk.size() - 1)];
            params.emplace_back(std::string_view(graph));
            params.emplace_back(k.first);
            params.emplace_back(k.second);
        }
        auto r = co_await conn.async_query_prepared(sql, params);
        if (!r) {
            if (tables_missing(conn)) co_return out;  // every key: nullopt
            co_return r.error();
        }
        for (std::size_t i = 0; i < r.value().size(); ++i) {
            auto e = parse_row(r.value(), i);
            found.emplace(std::pair{e.key.node_id, e.key.other_id}, e.row);
        }
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (auto it = found.find(keys[i]); it != found.end()) out[i] = it->second;
    }
    co_return out;
}

asio::awaitable<core::result<std::vector<stored_edge>>> async_dump_edges(mariadb_conn& conn) {
    std::string sql = "SELECT ";
    sql += row_columns;
    sql += " FROM edges ORDER BY graph, node_id, direction, other_id";
    auto r = co_await conn.async_query(sql);
    if (!r) co_return r.error();
    std::vector<stored_edge> out;
    out.reserve(r.value().size());
    for (std::size_t i = 0; i < r.value().size(); ++i) out.push_back(parse_row(r.value(), i));
    co_return out;
}

asio::awaitable<core::result<std::vector<std::pair<edge_count_key, std::int64_t>>>> async_dump_edge_counts(
    mariadb_conn& conn) {
    auto r = co_await conn.async_query(
        "SELECT graph, node_id, direction, state, count FROM edge_counts WHERE count <> 0 "
        "ORDER BY graph, node_id, direction, state");
    if (!r) co_return r.error();
    std::vector<std::pair<edge_count_key, std::int64_t>> out;
    for (std::size_t i = 0; i < r.value().size(); ++i) {
        edge_count_key k{std::string(*r.value().at(i, 0)), r.value().int64_at(i, 1),
                         static_cast<edge_direction>(r.value().uint64_at(i, 2)),
                         static_cast<core::edge_state>(r.value().uint64_at(i, 3))};
        out.emplace_back(std::move(k), r.value().int64_at(i, 4));
    }
    co_return out;
}

}  // namespace cairn::shards
