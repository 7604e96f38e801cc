// RAII wrappers over the LMDB C API (an environment, a transaction, a cursor) and the
// "lmdb" error category. Internal to journal/. An env may be used by any thread (MDB_NOTLS);
// a txn and its cursors belong to the thread that uses them until they end.
#pragma once

#include "core/result.hpp"

#include <lmdb.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace cairn::journal::detail {

// The flags the journal opens its environment with. MDB_NOTLS: read transactions are not tied
// to a thread, so short reads may come from any thread (and Asio's thread pools).
// MDB_NOMETASYNC: a commit flushes the data file and writes its meta page without a flush of its
// own, so a commit costs one flush instead of two; the journal acknowledges a commit only once a
// later flush of the file made its meta page durable (the next commit's, or mdb_env_sync), which
// keeps every acknowledged commit durable (docs/journal-format.md, "What is durable when").
inline constexpr unsigned env_flags = MDB_NOTLS | MDB_NOMETASYNC;

// Flags the journal must never use (docs/journal-format.md says why): each of them can lose or
// undo acknowledged commits after an OS crash, or turn a full disk into SIGBUS. MDB_NOSUBDIR is
// left off because the environment is a directory.
inline constexpr unsigned env_flags_forbidden = MDB_NOSYNC | MDB_WRITEMAP | MDB_MAPASYNC | MDB_NOSUBDIR | MDB_RDONLY |
                                                MDB_NOLOCK;
static_assert((env_flags & env_flags_forbidden) == 0, "the journal never opens LMDB with an unsafe flag");
static_assert((env_flags & MDB_NOTLS) != 0, "reads come from any thread");
static_assert((env_flags & MDB_NOMETASYNC) != 0, "the writer's deferred acknowledgements assume unflushed meta pages");

// The flags of a reader beside the journal's owner (journal/inspect.hpp, journal/export_file.hpp):
// MDB_RDONLY, so it never writes data.mdb and the map size comes from the file; MDB_NOTLS as the
// journal uses it (MDB_NOMETASYNC means nothing to a reader, which never commits).
inline constexpr unsigned env_flags_read_only = MDB_RDONLY | MDB_NOTLS;
static_assert(env_flags_read_only == ((env_flags & ~unsigned{MDB_NOMETASYNC}) | MDB_RDONLY),
              "a reader opens as the journal does, read-only");

const boost::system::error_category& lmdb_category() noexcept;
inline core::error_code lmdb_error(int rc) noexcept { return {rc, lmdb_category()}; }

inline MDB_val to_val(std::string_view s) noexcept {
    return MDB_val{s.size(), const_cast<char*>(s.data())};
}
inline std::string_view to_view(const MDB_val& v) noexcept {
    return {static_cast<const char*>(v.mv_data), v.mv_size};
}

class env {
public:
    env() = default;
    ~env();
    env(env&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
    env& operator=(env&& o) noexcept;
    env(const env&) = delete;
    env& operator=(const env&) = delete;

    // Creates and opens an environment in directory path (which must exist) with env_flags.
    [[nodiscard]] static core::result<env> open(const std::string& path, std::uint64_t map_bytes,
                                                unsigned max_dbs, unsigned readers_max);

    // Opens the environment in directory path with env_flags_read_only and takes no flock, so it
    // works while the journal's owner (in another process) holds it and after the owner died.
    // Errors: errc::not_found (no data.mdb in path), errc::journal_corrupt (LMDB refuses the
    // file), LMDB errors.
    [[nodiscard]] static core::result<env> open_read_only(const std::string& path, unsigned max_dbs,
                                                          unsigned readers_max);

    MDB_env* get() const noexcept { return e_; }

private:
    explicit env(MDB_env* e) noexcept : e_(e) {}
    MDB_env* e_ = nullptr;
};

// A transaction that aborts when destroyed unless commit() ran. commit() ends the transaction
// whatever it returns: LMDB frees the handle even when the commit fails.
class txn {
public:
    txn() = default;
    ~txn() { abort(); }
    txn(txn&& o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
    txn& operator=(txn&& o) noexcept;
    txn(const txn&) = delete;
    txn& operator=(const txn&) = delete;

    [[nodiscard]] static core::result<txn> begin_read(const env& e);
    // Returns the raw LMDB code so that the writer can tell MDB_MAP_FULL from the rest.
    [[nodiscard]] static int begin_write(const env& e, txn& out) noexcept;

    // Returns 0 or the LMDB error; the transaction is over either way.
    [[nodiscard]] int commit() noexcept;
    void abort() noexcept;

    MDB_txn* get() const noexcept { return t_; }
    explicit operator bool() const noexcept { return t_ != nullptr; }

    // 0, MDB_NOTFOUND or another LMDB error.
    [[nodiscard]] int get(MDB_dbi dbi, std::string_view key, std::string_view& value) const noexcept;
    [[nodiscard]] int put(MDB_dbi dbi, std::string_view key, std::string_view value, unsigned flags = 0) noexcept;
    [[nodiscard]] int del(MDB_dbi dbi, std::string_view key) noexcept;  // MDB_NOTFOUND if absent

private:
    MDB_txn* t_ = nullptr;
};

// Opens the named database name, which must exist, in t (without MDB_CREATE): errc::journal_corrupt
// if it is missing, or an LMDB error. In a read-only txn the handle lasts until t ends, or for the
// environment's life if t commits.
[[nodiscard]] core::result<MDB_dbi> open_existing_db(const txn& t, const char* name);

class cursor {
public:
    cursor() = default;
    ~cursor();
    cursor(const cursor&) = delete;
    cursor& operator=(const cursor&) = delete;

    [[nodiscard]] int open(const txn& t, MDB_dbi dbi) noexcept;
    // 0, MDB_NOTFOUND or another LMDB error; key and value point into the map until the txn ends.
    [[nodiscard]] int get(std::string_view& key, std::string_view& value, MDB_cursor_op op) noexcept;
    // Positions at the first key >= key.
    [[nodiscard]] int seek(std::string_view key, std::string_view& found_key, std::string_view& value) noexcept;
    [[nodiscard]] int del() noexcept;

private:
    MDB_cursor* c_ = nullptr;
};

// Big-endian fixed-width integers, so that LMDB's bytewise key order is numeric order.
inline void put_be(char* out, std::uint64_t v, int bytes) noexcept {
    for (int i = bytes - 1; i >= 0; --i) {
        out[i] = static_cast<char>(v & 0xff);
        v >>= 8;
    }
}
inline std::uint64_t get_be(const char* in, int bytes) noexcept {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
    return v;
}

}  // namespace cairn::journal::detail
