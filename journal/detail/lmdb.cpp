#include "journal/detail/lmdb.hpp"

#include "core/assert.hpp"

#include <filesystem>

namespace cairn::journal::detail {
namespace {

class category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "lmdb"; }
    std::string message(int ev) const override { return mdb_strerror(ev); }
};

}  // namespace

const boost::system::error_category& lmdb_category() noexcept {
    static const category instance;
    return instance;
}

env::~env() {
    if (e_ != nullptr) mdb_env_close(e_);
}

env& env::operator=(env&& o) noexcept {
    if (this != &o) {
        if (e_ != nullptr) mdb_env_close(e_);
        e_ = std::exchange(o.e_, nullptr);
    }
    return *this;
}

core::result<env> env::open(const std::string& path, std::uint64_t map_bytes, unsigned max_dbs,
                            unsigned readers_max) {
    MDB_env* raw = nullptr;
    if (int rc = mdb_env_create(&raw); rc != 0) return lmdb_error(rc);
    env e(raw);  // mdb_env_close must run even when mdb_env_open fails.
    if (int rc = mdb_env_set_mapsize(raw, static_cast<std::size_t>(map_bytes)); rc != 0) return lmdb_error(rc);
    if (int rc = mdb_env_set_maxdbs(raw, max_dbs); rc != 0) return lmdb_error(rc);
    if (int rc = mdb_env_set_maxreaders(raw, readers_max); rc != 0) return lmdb_error(rc);
    if (int rc = mdb_env_open(raw, path.c_str(), env_flags, 0640); rc != 0) return lmdb_error(rc);
    return e;
}

core::result<env> env::open_read_only(const std::string& path, unsigned max_dbs, unsigned readers_max) {
    // No data.mdb, no journal: say so before mdb_env_open, which would leave a lock.mdb behind.
    std::error_code fs_ec;
    if (!std::filesystem::is_regular_file(std::filesystem::path(path) / "data.mdb", fs_ec)) {
        return core::errc::not_found;
    }
    MDB_env* raw = nullptr;
    if (int rc = mdb_env_create(&raw); rc != 0) return lmdb_error(rc);
    env e(raw);
    if (int rc = mdb_env_set_maxdbs(raw, max_dbs); rc != 0) return lmdb_error(rc);
    if (int rc = mdb_env_set_maxreaders(raw, readers_max); rc != 0) return lmdb_error(rc);
    if (int rc = mdb_env_open(raw, path.c_str(), env_flags_read_only, 0640); rc != 0) {
        if (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH) return core::errc::journal_corrupt;
        return lmdb_error(rc);
    }
    return e;
}

txn& txn::operator=(txn&& o) noexcept {
    if (this != &o) {
        abort();
        t_ = std::exchange(o.t_, nullptr);
    }
    return *this;
}

core::result<txn> txn::begin_read(const env& e) {
    txn t;
    if (int rc = mdb_txn_begin(e.get(), nullptr, MDB_RDONLY, &t.t_); rc != 0) {
        t.t_ = nullptr;
        return lmdb_error(rc);
    }
    return t;
}

int txn::begin_write(const env& e, txn& out) noexcept {
    out.abort();
    int rc = mdb_txn_begin(e.get(), nullptr, 0, &out.t_);
    if (rc != 0) out.t_ = nullptr;
    return rc;
}

int txn::commit() noexcept {
    CAIRN_ASSERT(t_ != nullptr);
    return mdb_txn_commit(std::exchange(t_, nullptr));
}

void txn::abort() noexcept {
    if (t_ != nullptr) mdb_txn_abort(std::exchange(t_, nullptr));
}

int txn::get(MDB_dbi dbi, std::string_view key, std::string_view& value) const noexcept {
    MDB_val k = to_val(key);
    MDB_val v{};
    const int rc = mdb_get(t_, dbi, &k, &v);
    if (rc == 0) value = to_view(v);
    return rc;
}

int txn::put(MDB_dbi dbi, std::string_view key, std::string_view value, unsigned flags) noexcept {
    MDB_val k = to_val(key);
    MDB_val v = to_val(value);
    return mdb_put(t_, dbi, &k, &v, flags);
}

int txn::del(MDB_dbi dbi, std::string_view key) noexcept {
    MDB_val k = to_val(key);
    return mdb_del(t_, dbi, &k, nullptr);
}

core::result<MDB_dbi> open_existing_db(const txn& t, const char* name) {
    MDB_dbi dbi = 0;
    const int rc = mdb_dbi_open(t.get(), name, 0, &dbi);
    if (rc == MDB_NOTFOUND) return core::errc::journal_corrupt;
    if (rc != 0) return lmdb_error(rc);
    return dbi;
}

cursor::~cursor() {
    if (c_ != nullptr) mdb_cursor_close(c_);
}

int cursor::open(const txn& t, MDB_dbi dbi) noexcept {
    CAIRN_ASSERT(c_ == nullptr);
    return mdb_cursor_open(t.get(), dbi, &c_);
}

int cursor::get(std::string_view& key, std::string_view& value, MDB_cursor_op op) noexcept {
    MDB_val k{};
    MDB_val v{};
    const int rc = mdb_cursor_get(c_, &k, &v, op);
    if (rc == 0) {
        key = to_view(k);
        value = to_view(v);
    }
    return rc;
}

int cursor::seek(std::string_view key, std::string_view& found_key, std::string_view& value) noexcept {
    MDB_val k = to_val(key);
    MDB_val v{};
    const int rc = mdb_cursor_get(c_, &k, &v, MDB_SET_RANGE);
    if (rc == 0) {
        found_key = to_view(k);
        value = to_view(v);
    }
    return rc;
}

int cursor::del() noexcept { return mdb_cursor_del(c_, 0); }

}  // namespace cairn::journal::detail
