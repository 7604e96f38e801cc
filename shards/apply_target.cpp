#include "shards/apply_target.hpp"

#include "shards/gateways.hpp"
#include "shards/mariadb_conn.hpp"
#include "shards/pool.hpp"
#include "shards/shard_identity.hpp"

#include <fmt/format.h>

namespace cairn::shards {
namespace {

namespace asio = boost::asio;

class mariadb_session final : public apply_session {
public:
    explicit mariadb_session(lease l) : lease_(std::move(l)) {}

    asio::awaitable<core::result<void>> async_create_schema(const apply_context& ctx) override {
        co_return co_await shards::async_create_schema(*lease_, ctx);
    }

    asio::awaitable<core::result<void>> async_apply(const apply_context& ctx, core::shard_index shard,
                                                    std::span<const core::op* const> ops) override {
        co_return co_await async_apply_ops(*lease_, ctx, shard, ops);
    }

    asio::awaitable<core::result<void>> async_mark_applied(std::uint64_t node_id, std::uint64_t seq) override {
        co_return co_await async_write_applied_mark(*lease_, node_id, seq);
    }

    asio::awaitable<core::result<std::uint64_t>> async_read_mark(std::uint64_t node_id) override {
        co_return co_await async_read_applied_mark(*lease_, node_id);
    }

    asio::awaitable<core::result<void>> async_mark_late(std::uint64_t node_id, std::uint64_t number) override {
        co_return co_await async_write_late_mark(*lease_, node_id, number);
    }

    asio::awaitable<core::result<std::uint64_t>> async_read_late_mark(std::uint64_t node_id) override {
        co_return co_await async_read_late_mark_of(*lease_, node_id);
    }

    asio::awaitable<core::result<std::uint32_t>> async_read_map_version() override {
        auto id = co_await async_read_shard_identity(*lease_);
        if (!id) co_return id.error();
        co_return id.value() ? id.value()->map_version : std::uint32_t{1};
    }

    std::string describe(const core::error_code& ec) const override {
        if (lease_->last_errno() != 0) {
            return fmt::format("{} ({}: {})", ec.message(), lease_->last_errno(), lease_->last_error());
        }
        return ec.message();
    }

private:
    lease lease_;
};

class mariadb_target final : public apply_target {
public:
    explicit mariadb_target(pool& p) : pool_(p) {}

    asio::awaitable<core::result<std::unique_ptr<apply_session>>> async_open() override {
        auto l = co_await pool_.async_acquire();
        if (!l) co_return l.error();
        co_return std::unique_ptr<apply_session>(std::make_unique<mariadb_session>(std::move(l).value()));
    }

    std::uint64_t connections_made() const noexcept override { return pool_.connections_made(); }

    std::string name() const override { return pool_.endpoint(); }

    std::string describe_open_failure(const core::error_code& ec) const override {
        const std::string why = pool_.last_connect_failure();
        return why.empty() ? ec.message() : fmt::format("{} ({})", ec.message(), why);
    }

private:
    pool& pool_;
};

}  // namespace

std::unique_ptr<apply_target> make_mariadb_apply_target(pool& p) { return std::make_unique<mariadb_target>(p); }

}  // namespace cairn::shards
