#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "net/replay_routes.hpp"

#include "core/codec.hpp"
#include "core/document.hpp"
#include "indexing/index_registry.hpp"
#include "indexing/indexed_objects.hpp"
#include "journal/journal.hpp"
#include "net/detail/answers.hpp"
#include "net/detail/applied_wait.hpp"
#include "net/detail/journal_write.hpp"
#include "net/gateway.hpp"
#include "net/problem.hpp"
#include "net/router.hpp"
#include "shards/journal_await.hpp"
#include "shards/model_dispatch.hpp"
#include "shards/shard_set.hpp"

#include <msgpack.hpp>
#include <nlohmann/json.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <span>

namespace cairn::net {
namespace {

namespace asio = boost::asio;
using json = nlohmann::json;
using detail::answer;

constexpr std::uint64_t u64_max = std::numeric_limits<std::uint64_t>::max();
constexpr std::size_t scan_max_default = 10'000;  // journal ops one replay request reads at most
constexpr std::size_t scan_max_limit = 100'000;
constexpr std::size_t records_max = 10'000;       // records in one POST /v1/admin/replay/records
constexpr std::size_t append_chunk = 1'000;       // replayed ops per journal append
constexpr std::size_t key_bytes_max = 200;

constexpr std::string_view filter_params[] = {"from_seq", "to_seq", "since_ms", "until_ms", "shard", "model",
                                              "name", "key", "dry_run", "expired_counters"};
constexpr std::string_view journal_params[] = {"from_seq", "to_seq", "since_ms", "until_ms", "shard", "model",
                                               "name", "key", "dry_run", "expired_counters", "scan_max"};

// Which ops a replay takes. Seq and time bounds are inclusive; the rest must all match.
struct replay_filter {
    std::uint64_t from_seq = 1;
    std::uint64_t to_seq = u64_max;
    std::uint64_t since_ms = 0;
    std::uint64_t until_ms = u64_max;
    std::optional<core::shard_index> shard;
    std::optional<core::model> model;
    std::optional<std::string> name;  // graph, entity kind, cell table, counter metric or index name
    std::optional<std::string> key;   // a node id, an entity id or cell row key, a counter dimension value
    bool dry_run = false;
    bool include_expired_counters = false;
};

std::string_view replay_op_name(const core::op& o) {
    return std::visit(
        [](const auto& b) -> std::string_view {
            using T = std::decay_t<decltype(b)>;
            if constexpr (std::is_same_v<T, core::edge_op> || std::is_same_v<T, core::node_op>) return b.graph;
            if constexpr (std::is_same_v<T, core::entity_op>) return b.entity_kind;
            if constexpr (std::is_same_v<T, core::cell_op>) return b.table;
            if constexpr (std::is_same_v<T, core::counter_op>) return b.metric;
            if constexpr (std::is_same_v<T, core::index_def_op>) return b.name;
        },
        o.body);
}

bool same_id(std::string_view key, std::int64_t id) {
    std::int64_t k = 0;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), k);
    return ec == std::errc{} && end == key.data() + key.size() && k == id;
}

bool same_id16(std::string_view key, std::string_view bytes) {
    const auto k = core::parse_id16(key);
    return k && core::id16_bytes(*k) == bytes;
}

bool key_matches(const core::op& o, std::string_view key) {
    return std::visit(
        [key](const auto& b) -> bool {
            using T = std::decay_t<decltype(b)>;
            if constexpr (std::is_same_v<T, core::edge_op>) return same_id(key, b.source_id) || same_id(key, b.destination_id);
            if constexpr (std::is_same_v<T, core::node_op>) return same_id(key, b.node_id);
            if constexpr (std::is_same_v<T, core::entity_op>) return same_id16(key, b.id);
            if constexpr (std::is_same_v<T, core::cell_op>) return same_id16(key, b.row_key);
            if constexpr (std::is_same_v<T, core::counter_op>) {
                return std::find(b.dimensions.begin(), b.dimensions.end(), key) != b.dimensions.end();
            }
            if constexpr (std::is_same_v<T, core::index_def_op>) return b.name == key;
        },
        o.body);
}

bool matches(const replay_filter& f, const core::shard_map& map, std::uint64_t seq, std::uint64_t append_ms,
             const core::op& o) {
    if (seq < f.from_seq || seq > f.to_seq || append_ms < f.since_ms || append_ms > f.until_ms) return false;
    if (f.model && o.kind() != *f.model) return false;
    if (f.name && replay_op_name(o) != *f.name) return false;
    if (f.key && !key_matches(o, *f.key)) return false;
    return !f.shard || shards::touches_shard(o, map, *f.shard);
}

// Why this gateway cannot apply o, or nothing: a model it has no declaration for.
std::optional<std::string> undeclared(const gateway& gw, const core::op& o) {
    return std::visit(
        [&gw](const auto& b) -> std::optional<std::string> {
            using T = std::decay_t<decltype(b)>;
            if constexpr (std::is_same_v<T, core::entity_op>) {
                if (!gw.entities || !gw.entities->declared(b.entity_kind)) return "entity kind " + b.entity_kind;
            } else if constexpr (std::is_same_v<T, core::cell_op>) {
                if (!gw.cells || !gw.cells->declared(b.table)) return "cell table " + b.table;
            } else if constexpr (std::is_same_v<T, core::counter_op>) {
                if (!gw.counters || !gw.counters->find(b.metric)) return "counter metric " + b.metric;
            }
            return std::nullopt;
        },
        o.body);
}

// A counter increment older than the shards keep applied op ids: replaying it could count it twice
// (the apply path refuses it with op_expired, so it would end as a dead letter).
bool expired_counter(const gateway& gw, const core::op& o, std::uint64_t now_ms) {
    if (o.kind() != core::model::counter || !gw.counters) return false;
    const auto keep_ms = static_cast<std::uint64_t>(gw.counters->op_ids_keep.count()) * 3'600'000;
    const auto ms = core::hlc_ms(o.ts);
    return now_ms > ms && now_ms - ms > keep_ms;
}

std::variant<replay_filter, input_error> parse_filter(const route_context& ctx, const gateway& gw) {
    replay_filter f;
    auto number = [&ctx](std::string_view name, std::uint64_t min, std::uint64_t& out) -> std::optional<input_error> {
        if (auto v = ctx.query_param(name)) {
            auto n = detail::parse_uint(*v, min, u64_max);
            if (!n) return input_error{std::string(name), fmt::format("must be an integer of at least {}", min)};
            out = *n;
        }
        return std::nullopt;
    };
    if (auto e = number("from_seq", 1, f.from_seq)) return *e;
    if (auto e = number("to_seq", 1, f.to_seq)) return *e;
    if (auto e = number("since_ms", 0, f.since_ms)) return *e;
    if (auto e = number("until_ms", 0, f.until_ms)) return *e;
    if (f.from_seq > f.to_seq) return input_error{"to_seq", "must not be below from_seq"};
    if (f.since_ms > f.until_ms) return input_error{"until_ms", "must not be below since_ms"};
    if (auto s = ctx.query_param("shard")) {
        auto v = detail::parse_uint(*s, 0, (gw.shards.size() == 0) ? 0 : gw.shards.size() - 1);
        if (!v) return input_error{"shard", fmt::format("must be a shard index below {}", gw.shards.size())};
        f.shard = static_cast<core::shard_index>(*v);
    }
    if (auto m = ctx.query_param("model")) {
        f.model = core::model_from_name(*m);
        if (!f.model) return input_error{"model", "must be edge, node, entity, cell, counter or index"};
    }
    if (auto n = ctx.query_param("name")) {
        if (n->empty() || n->size() > key_bytes_max) return input_error{"name", "must be 1 to 200 bytes"};
        f.name = std::move(*n);
    }
    if (auto k = ctx.query_param("key")) {
        if (k->empty() || k->size() > key_bytes_max) return input_error{"key", "must be 1 to 200 bytes"};
        f.key = std::move(*k);
    }
    if (auto d = ctx.query_param("dry_run")) {
        if (*d != "true" && *d != "false") return input_error{"dry_run", "must be true or false"};
        f.dry_run = *d == "true";
    }
    if (auto x = ctx.query_param("expired_counters")) {
        if (*x != "skip" && *x != "include") return input_error{"expired_counters", "must be skip or include"};
        f.include_expired_counters = *x == "include";
    }
    return f;
}

// What one replay request did; rendered as its answer.
struct replay_tally {
    std::uint64_t scanned = 0;
    std::uint64_t matched = 0;
    std::uint64_t replayed = 0;
    std::uint64_t expired_counters = 0;  // matched counter ops older than the op id window, skipped
    std::uint64_t undeclared = 0;        // matched ops of a model this gateway does not declare, skipped
    std::string undeclared_example;
    std::uint64_t journaled_first_seq = 0;  // the seqs the replayed ops got here
    std::uint64_t journaled_last_seq = 0;

    json render() const {
        json out{{"scanned", scanned},   {"matched", matched},
                 {"replayed", replayed}, {"expired_counters_skipped", expired_counters},
                 {"undeclared_skipped", undeclared}};
        if (!undeclared_example.empty()) out["undeclared_example"] = undeclared_example;
        if (journaled_last_seq) {
            out["journaled_first_seq"] = journaled_first_seq;
            out["journaled_last_seq"] = journaled_last_seq;
        }
        return out;
    }
};

// Sorts one op into the tally and, when it is to be replayed, into batch.
void take_op(const gateway& gw, const replay_filter& f, std::uint64_t now_ms, core::op o, replay_tally& t,
             std::vector<core::op>& batch) {
    ++t.matched;
    if (!f.include_expired_counters && expired_counter(gw, o, now_ms)) {
        ++t.expired_counters;
        return;
    }
    if (auto why = undeclared(gw, o)) {
        ++t.undeclared;
        if (t.undeclared_example.empty()) t.undeclared_example = *why;
        return;
    }
    batch.push_back(std::move(o));
}

// Appends batch (ops that keep their op ids and ts) in chunks, unless f is a dry run; returns the
// journal's error when it refused a chunk. All or nothing for the caller: on a refusal it sends
// the same request again (Retry-After says when), so the chunks journaled before the refusal are
// journaled twice, which applying makes harmless.
asio::awaitable<std::optional<core::error_code>> async_append_replayed(gateway& gw, const replay_filter& f,
                                                                       std::vector<core::op> batch, replay_tally& t) {
    if (f.dry_run) co_return std::nullopt;
    // A replayed entity or cell carries the rows of the indexes that exist now, not of those that
    // existed when it was first written (an index created since would miss it otherwise). Held
    // until journaled: a new index's back-fill waits for writes that computed their rows without it.
    indexing::index_registry::write_ticket ticket;
    if (gw.indexes) {
        ticket = gw.indexes->enter_write();
        for (auto& o : batch) indexing::recompute_entries(o, *gw.indexes);
    }
    std::size_t done = 0;
    while (done < batch.size()) {
        const std::size_t n = std::min(append_chunk, batch.size() - done);
        std::vector<core::op> chunk(std::make_move_iterator(batch.begin() + static_cast<std::ptrdiff_t>(done)),
                                    std::make_move_iterator(batch.begin() + static_cast<std::ptrdiff_t>(done + n)));
        auto appended = co_await shards::async_append(gw.journal, std::move(chunk), std::string());
        if (!appended) co_return appended.error();
        if (t.journaled_first_seq == 0) t.journaled_first_seq = appended.value().first_seq;
        t.journaled_last_seq = appended.value().last_seq;
        t.replayed += n;
        done += n;
    }
    co_return std::nullopt;
}

// POST /v1/admin/replay: scans at most scan_max ops of this journal from from_seq.
asio::awaitable<response> async_replay_journal(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    if (auto e = detail::unknown_query_param(ctx.query, journal_params)) co_return detail::bad_field(req, e->field, e->detail);
    auto fv = parse_filter(ctx, gw);
    if (auto* e = std::get_if<input_error>(&fv)) co_return detail::bad_field(req, e->field, e->detail);
    replay_filter f = std::get<replay_filter>(fv);
    std::size_t scan_max = scan_max_default;
    if (auto s = ctx.query_param("scan_max")) {
        auto v = detail::parse_uint(*s, 1, scan_max_limit);
        if (!v) co_return detail::bad_field(req, "scan_max", fmt::format("must be an integer from 1 to {}", scan_max_limit));
        scan_max = *v;
    }
    // The range ends where the journal ends now: the replayed ops are appended after it and
    // must not be replayed again by the next request.
    const std::uint64_t last = gw.journal.last_seq();
    f.to_seq = std::min(f.to_seq, last);
    auto first = gw.journal.read_timed_ops(0, 1);
    if (!first) co_return detail::journal_error(req, first.error());
    const std::uint64_t first_kept = first.value().empty() ? last + 1 : first.value().front().seq;

    replay_tally t;
    std::vector<core::op> batch;
    const std::uint64_t now = core::system_wall_clock_ms();
    std::uint64_t next = std::max(f.from_seq, first_kept);
    if (next <= f.to_seq) {
        const auto routes = gw.routing.load();
        auto read = gw.journal.read_timed_ops(next - 1, std::min<std::uint64_t>(scan_max, f.to_seq - next + 1));
        if (!read) co_return detail::journal_error(req, read.error());
        for (auto& r : read.value()) {
            if (r.seq > f.to_seq) break;
            ++t.scanned;
            next = r.seq + 1;
            if (matches(f, routes->read_map(), r.seq, r.append_ms, r.op)) take_op(gw, f, now, std::move(r.op), t, batch);
        }
        if (read.value().empty()) next = f.to_seq + 1;
    }
    if (auto failure = co_await async_append_replayed(gw, f, std::move(batch), t)) {
        co_return detail::journal_error(req, *failure);
    }
    json out = t.render();
    out["dry_run"] = f.dry_run;
    out["next_seq"] = next;
    out["to_seq"] = f.to_seq;
    out["done"] = next > f.to_seq;
    out["first_kept_seq"] = first_kept;
    out["retired_in_range"] = f.from_seq < first_kept ? std::min(first_kept, f.to_seq + 1) - f.from_seq : 0;
    if (t.replayed) {
        spdlog::info("admin: replayed {} ops of seq {}..{} as seq {}..{}", t.replayed, f.from_seq, next - 1,
                     t.journaled_first_seq, t.journaled_last_seq);
    }
    co_return answer(req, out);
}

// The body of POST /v1/admin/replay/records: a msgpack array of [seq, append_ms, op record].
std::variant<std::vector<journal::timed_op>, input_error> parse_records(std::string_view body) {
    std::vector<journal::timed_op> out;
    try {
        const msgpack::unpack_limit limit(std::min(records_max, body.size()), 3, 0, 1 << 20, 0, 3);
        std::size_t offset = 0;
        const auto handle = msgpack::unpack(body.data(), body.size(), offset, nullptr, nullptr, limit);
        if (offset != body.size()) return input_error{"body", "has bytes after the msgpack array"};
        const auto& root = handle.get();
        if (root.type != msgpack::type::ARRAY) return input_error{"body", "must be a msgpack array of records"};
        for (std::uint32_t i = 0; i < root.via.array.size; ++i) {
            const auto& r = root.via.array.ptr[i];
            if (r.type != msgpack::type::ARRAY || r.via.array.size != 3 ||
                r.via.array.ptr[0].type != msgpack::type::POSITIVE_INTEGER ||
                r.via.array.ptr[1].type != msgpack::type::POSITIVE_INTEGER || r.via.array.ptr[2].type != msgpack::type::BIN) {
                return input_error{fmt::format("records[{}]", i), "must be [seq, append_ms, op record as bin]"};
            }
            const auto& bin = r.via.array.ptr[2].via.bin;
            auto op = core::decode_op(std::span<const char>(bin.ptr, bin.size));
            if (!op) return input_error{fmt::format("records[{}]", i), "the op record does not decode"};
            out.push_back(journal::timed_op{r.via.array.ptr[0].via.u64, r.via.array.ptr[1].via.u64, std::move(op.value())});
        }
    } catch (const std::exception& e) {
        return input_error{"body", fmt::format("is not msgpack within the limits ({})", e.what())};
    }
    return out;
}

// POST /v1/admin/replay/records: replays the records of the body that pass the filters.
asio::awaitable<response> async_replay_records(gateway& gw, route_context& ctx) {
    const auto& req = ctx.req;
    if (auto e = detail::unknown_query_param(ctx.query, filter_params)) co_return detail::bad_field(req, e->field, e->detail);
    auto fv = parse_filter(ctx, gw);
    if (auto* e = std::get_if<input_error>(&fv)) co_return detail::bad_field(req, e->field, e->detail);
    const replay_filter f = std::get<replay_filter>(fv);
    auto parsed = parse_records(req.body());
    if (auto* e = std::get_if<input_error>(&parsed)) co_return detail::bad_field(req, e->field, e->detail);
    auto& records = std::get<std::vector<journal::timed_op>>(parsed);

    replay_tally t;
    std::vector<core::op> batch;
    const std::uint64_t now = core::system_wall_clock_ms();
    const auto routes = gw.routing.load();
    for (auto& r : records) {
        ++t.scanned;
        if (matches(f, routes->read_map(), r.seq, r.append_ms, r.op)) take_op(gw, f, now, std::move(r.op), t, batch);
    }
    if (auto failure = co_await async_append_replayed(gw, f, std::move(batch), t)) {
        co_return detail::journal_error(req, *failure);
    }
    json out = t.render();
    out["dry_run"] = f.dry_run;
    if (t.replayed) {
        spdlog::info("admin: replayed {} ops from records as seq {}..{}", t.replayed, t.journaled_first_seq,
                     t.journaled_last_seq);
    }
    co_return answer(req, out);
}

}  // namespace

void add_replay_routes(router& r, gateway& gw) {
    const auto admin = core::role::admin;
    r.add(http::verb::post, "/v1/admin/replay", admin, [&gw](route_context& ctx) { return async_replay_journal(gw, ctx); });
    r.add(http::verb::post, "/v1/admin/replay/records", admin,
          [&gw](route_context& ctx) { return async_replay_records(gw, ctx); });
}

}  // namespace cairn::net
