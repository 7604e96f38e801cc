#include "indexing/index_registry.hpp"

#include "shards/index_store.hpp"
#include "shards/pool.hpp"
#include "shards/shard_set.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <memory>

namespace cairn::indexing {

namespace asio = boost::asio;

std::vector<core::index_def> index_registry::matching(bool cells, std::string_view name) const {
    std::shared_lock lock(mu_);
    std::vector<core::index_def> out;
    for (const auto& [_, d] : live_) {
        if (d.on_cells() == cells && d.kind == name) out.push_back(d);
    }
    return out;
}

std::vector<core::index_def> index_registry::of_kind(std::string_view kind) const { return matching(false, kind); }

std::vector<core::index_def> index_registry::of_cell_table(std::string_view table) const { return matching(true, table); }

std::optional<core::index_def> index_registry::find(std::string_view name) const {
    std::shared_lock lock(mu_);
    const auto it = live_.find(name);
    if (it == live_.end()) return std::nullopt;
    return it->second;
}

std::vector<core::index_def> index_registry::all() const {
    std::shared_lock lock(mu_);
    std::vector<core::index_def> out;
    for (const auto& [_, d] : live_) out.push_back(d);
    return out;
}

bool index_registry::loaded() const {
    std::shared_lock lock(mu_);
    return loaded_;
}

index_registry::write_ticket index_registry::enter_write() {
    std::lock_guard lock(tickets_mu_);
    ++tickets_out_[ticket_epoch_];
    return write_ticket(this, ticket_epoch_);
}

void index_registry::write_ticket::release() noexcept {
    if (!reg_) return;
    std::lock_guard lock(reg_->tickets_mu_);
    const auto it = reg_->tickets_out_.find(epoch_);
    if (--it->second == 0) reg_->tickets_out_.erase(it);
    reg_ = nullptr;
}

asio::awaitable<bool> index_registry::async_write_barrier(std::chrono::milliseconds timeout) {
    std::uint64_t epoch = 0;
    {
        std::lock_guard lock(tickets_mu_);
        epoch = ticket_epoch_++;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    asio::steady_timer poll(co_await asio::this_coro::executor);
    for (;;) {
        {
            std::lock_guard lock(tickets_mu_);
            if (tickets_out_.empty() || tickets_out_.begin()->first > epoch) co_return true;
        }
        if (std::chrono::steady_clock::now() >= deadline) co_return false;
        poll.expires_after(std::chrono::milliseconds(1));
        core::error_code ec;
        co_await poll.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

asio::awaitable<bool> index_registry::async_refresh() {
    const std::uint64_t started = ++refreshes_started_;
    // name -> (ts, def or nullopt when dropped), the newest across the shards that answered.
    auto merged = std::make_shared<std::map<std::string, std::pair<std::uint64_t, std::optional<core::index_def>>>>();
    auto answered = std::make_shared<std::size_t>(0);
    std::vector<core::shard_index> shards;
    for (core::shard_index s = 0; s < shards_.size(); ++s) shards.push_back(s);
    auto query = [merged, answered](core::shard_index, shards::mariadb_conn& conn) -> asio::awaitable<core::result<void>> {
        auto defs = co_await shards::async_read_index_defs(conn);
        if (!defs) co_return defs.error();
        ++*answered;
        for (auto& d : defs.value()) {
            auto& slot = (*merged)[d.name];
            if (d.ts >= slot.first) slot = {d.ts, std::move(d.def)};
        }
        co_return core::success();
    };
    co_await shards_.async_read_each(shards, query, timeout_);
    if (*answered == 0) co_return false;
    std::map<std::string, core::index_def, std::less<>> live;
    for (auto& [name, slot] : *merged) {
        if (slot.second) live.emplace(name, std::move(*slot.second));
    }
    std::unique_lock lock(mu_);
    if (started < refresh_installed_) co_return true;  // A refresh that began later has installed its set.
    refresh_installed_ = started;
    live_ = std::move(live);
    loaded_ = true;
    co_return true;
}

asio::awaitable<void> index_registry::async_refresh_loop(std::chrono::milliseconds every) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (!stopping_) {
        co_await async_refresh();
        {
            std::lock_guard lock(timer_mu_);
            if (stopping_) break;
            timer.expires_after(every);
            timer_ = &timer;
        }
        core::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        std::lock_guard lock(timer_mu_);
        timer_ = nullptr;
    }
}

void index_registry::stop() {
    std::lock_guard lock(timer_mu_);
    stopping_ = true;
    if (timer_) timer_->cancel();
}

}  // namespace cairn::indexing
