// cairn's vocabulary for operating errors: result<T> holds a value or an error_code from
// core::errc, Asio, LMDB or MariaDB. No I/O, no threads; safe to include anywhere.
#pragma once

#include <boost/outcome/result.hpp>
#include <boost/system/error_code.hpp>

#include <string_view>
#include <system_error>

namespace cairn::core {

using error_code = boost::system::error_code;

template <class T>
using result = boost::outcome_v2::result<T, error_code>;

using boost::outcome_v2::success;

// Operating errors raised by cairn itself. Values are stable: they appear in logs and metrics.
enum class errc {
    ok = 0,
    bad_request = 1,        // client input failed validation
    not_found = 2,          // the row or route does not exist
    journal_full = 3,       // MDB_MAP_FULL or the configured size limit: refuse, retry later
    journal_failed = 4,     // a sticky journal failure (EIO, MDB_PANIC): restart required
    journal_corrupt = 5,    // a record on disk does not decode
    shard_unavailable = 6,  // cannot connect to / lost the shard
    shard_timeout = 7,      // a shard did not answer before its deadline
    shard_retry = 8,        // deadlock or lock wait timeout: retry at once
    shard_rejected = 9,     // the shard refused this op (constraint, bad data): error queue
    overloaded = 10,        // backpressure: too much unapplied or queued work
    shutting_down = 11,
    timeout = 12,
    unauthorized = 13,
    forbidden = 14,
    too_large = 15,
    conflict = 16,
    op_expired = 17,   // a counter op older than its op ids are kept: applying it could double-count
    undeclared = 18,   // the op names a metric (or table) this gateway's config does not declare
    disk_full = 19,    // the journal's file system is full (ENOSPC, EDQUOT): refuse, retry later
};

const boost::system::error_category& cairn_category() noexcept;

inline error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), cairn_category()};
}

}  // namespace cairn::core

namespace boost::system {
template <>
struct is_error_code_enum<cairn::core::errc> : std::true_type {};
}  // namespace boost::system
