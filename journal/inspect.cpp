// Read-only journal inspection (inspect.hpp). Opens with detail::env::open_read_only: the journal's
// own open is read-write with a flock, which a reader beside a running cairnd must not take.
#include "journal/inspect.hpp"

#include "core/codec.hpp"
#include "core/route_table.hpp"
#include "journal/detail/lmdb.hpp"
#include "journal/detail/record_codec.hpp"
#include "journal/detail/record_format.hpp"

#include <fmt/format.h>
#include <lmdb.h>

#include <filesystem>
#include <memory>
#include <span>

namespace cairn::journal {
namespace {

// Reader slots for the inspecting process only (LMDB's lock file keeps its own table size).
constexpr unsigned inspect_readers_max = 4;

struct cursor_closer {
    void operator()(MDB_cursor* c) const noexcept { mdb_cursor_close(c); }
};

std::string_view view(const MDB_val& v) { return {static_cast<const char*>(v.mv_data), v.mv_size}; }

void note(inspection& out, std::string where, std::uint64_t seq, std::string what) {
    if (out.problems.size() < inspect_problems_max) out.problems.push_back({std::move(where), seq, std::move(what)});
}

// Calls fn(key, value) for every entry of dbi; returns the LMDB error of the walk, if any.
template <typename Fn>
int walk(MDB_txn* t, MDB_dbi dbi, Fn&& fn) {
    MDB_cursor* raw = nullptr;
    if (int rc = mdb_cursor_open(t, dbi, &raw); rc != 0) return rc;
    std::unique_ptr<MDB_cursor, cursor_closer> c(raw);
    MDB_val k{};
    MDB_val v{};
    for (int rc = mdb_cursor_get(raw, &k, &v, MDB_FIRST); rc != MDB_NOTFOUND; rc = mdb_cursor_get(raw, &k, &v, MDB_NEXT)) {
        if (rc != 0) return rc;
        fn(view(k), view(v));
    }
    return 0;
}

}  // namespace

core::result<inspection> inspect(const std::string& path, bool check) {
    auto env = detail::env::open_read_only(path, detail::dbs_max, inspect_readers_max);
    if (!env) return env.error();
    MDB_env* raw_env = env.value().get();
    auto txn = detail::txn::begin_read(env.value());
    if (!txn) return txn.error();
    MDB_txn* raw_txn = txn.value().get();

    struct named {
        const char* name;
        MDB_dbi dbi = 0;
    };
    named ops{detail::db_ops}, cursors{detail::db_cursors}, errors{detail::db_errors}, dead{detail::db_dead},
        idem{detail::db_idem}, meta{detail::db_meta};
    for (named* n : {&ops, &cursors, &errors, &dead, &idem, &meta}) {
        auto dbi = detail::open_existing_db(txn.value(), n->name);
        if (!dbi) return dbi.error();
        n->dbi = dbi.value();
    }

    inspection out;
    out.checked = check;
    {
        MDB_envinfo info{};
        MDB_stat st{};
        mdb_env_info(raw_env, &info);
        mdb_env_stat(raw_env, &st);
        out.map_bytes_max = info.me_mapsize;
        out.map_bytes_used = (info.me_last_pgno + 1) * std::uint64_t{st.ms_psize};
        std::error_code fs_ec;
        out.file_bytes = std::filesystem::file_size(std::filesystem::path(path) / "data.mdb", fs_ec);
    }
    auto count = [&](MDB_dbi dbi) -> std::uint64_t {
        MDB_stat st{};
        return mdb_stat(raw_txn, dbi, &st) == 0 ? st.ms_entries : 0;
    };
    out.error_count = count(errors.dbi);
    out.dead_count = count(dead.dbi);
    out.idem_count = count(idem.dbi);

    int rc = walk(raw_txn, meta.dbi, [&](std::string_view k, std::string_view v) {
        if (k == detail::meta_route) {
            // The route table this gateway follows (shards/split_follower.hpp): text, not a number.
            if (v.size() > detail::route_bytes_max || !core::route_table::parse(v)) {
                note(out, "meta", 0, fmt::format("route: {} bytes that are not a route table", v.size()));
            }
            return;
        }
        if (v.size() != detail::meta_value_bytes) {
            note(out, "meta", 0, fmt::format("{}: {} bytes, not {}", k, v.size(), detail::meta_value_bytes));
            return;
        }
        const std::uint64_t x = detail::get_be(v.data(), 8);
        if (k == detail::meta_node_id) out.node_id = x;
        if (k == detail::meta_format_version) out.format_version = x;
        if (k == detail::meta_next_seq) out.next_seq = x;
    });
    if (rc != 0) return detail::lmdb_error(rc);
    if (check && out.format_version != detail::format_version) {
        note(out, "meta", 0, fmt::format("format version {} is not the supported {}", out.format_version,
                                         detail::format_version));
    }

    std::uint64_t previous = 0;
    rc = walk(raw_txn, ops.dbi, [&](std::string_view k, std::string_view v) {
        if (k.size() != detail::ops_key_bytes || v.size() < detail::ops_value_header_bytes) {
            note(out, "ops", 0, fmt::format("a key of {} bytes with a value of {} bytes", k.size(), v.size()));
            return;
        }
        const std::uint64_t seq = detail::get_be(k.data(), 8);
        const std::uint64_t ms = detail::get_be(v.data(), 8);
        ++out.ops_count;
        out.ops_bytes += v.size() - detail::ops_value_header_bytes;
        if (out.first_seq == 0) {
            out.first_seq = seq;
            out.first_time_ms = ms;
        }
        out.last_seq = seq;
        out.last_time_ms = ms;
        if (!check) return;
        if (seq <= previous) note(out, "ops", seq, fmt::format("seq after {} is not greater", previous));
        previous = seq;
        auto op = core::decode_op(std::span(v.data() + detail::ops_value_header_bytes,
                                            v.size() - detail::ops_value_header_bytes));
        if (!op) note(out, "ops", seq, fmt::format("the op record does not decode: {}", op.error().message()));
    });
    if (rc != 0) return detail::lmdb_error(rc);

    rc = walk(raw_txn, cursors.dbi, [&](std::string_view k, std::string_view v) {
        if (k.size() != detail::cursor_key_bytes || v.size() != detail::cursor_value_bytes) {
            note(out, "cursors", 0, fmt::format("a key of {} bytes with a value of {} bytes", k.size(), v.size()));
            return;
        }
        out.cursors.emplace_back(static_cast<std::uint32_t>(detail::get_be(k.data(), 4)), detail::get_be(v.data(), 8));
    });
    if (rc != 0) return detail::lmdb_error(rc);
    if (check) {
        const std::uint64_t through = std::max(out.last_seq, out.next_seq > 0 ? out.next_seq - 1 : 0);
        for (const auto& [shard, seq] : out.cursors) {
            if (seq > through) note(out, "cursors", seq, fmt::format("shard {}'s cursor is past the last seq {}", shard, through));
        }
        rc = walk(raw_txn, errors.dbi, [&](std::string_view k, std::string_view v) {
            const std::uint64_t seq = k.size() == detail::errors_key_bytes ? detail::get_be(k.data() + 12, 8) : 0;
            if (k.size() != detail::errors_key_bytes) note(out, "errors", 0, fmt::format("a key of {} bytes", k.size()));
            if (auto t = detail::decode_task(std::span(v.data(), v.size())); !t) {
                note(out, "errors", seq, fmt::format("the task does not decode: {}", t.error().message()));
            }
        });
        if (rc != 0) return detail::lmdb_error(rc);
        rc = walk(raw_txn, dead.dbi, [&](std::string_view k, std::string_view v) {
            const std::uint64_t seq = k.size() == detail::dead_key_bytes ? detail::get_be(k.data() + 4, 8) : 0;
            if (k.size() != detail::dead_key_bytes) note(out, "dead", 0, fmt::format("a key of {} bytes", k.size()));
            if (auto d = detail::decode_dead(std::span(v.data(), v.size())); !d) {
                note(out, "dead", seq, fmt::format("the dead letter does not decode: {}", d.error().message()));
            }
        });
        if (rc != 0) return detail::lmdb_error(rc);
    }
    return out;
}

}  // namespace cairn::journal
