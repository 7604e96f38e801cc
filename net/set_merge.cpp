#include "net/set_merge.hpp"

#include "core/assert.hpp"

#include <algorithm>

namespace cairn::net {
namespace {

namespace asio = boost::asio;

// One sorted stream with a buffered chunk. Skipping ahead re-reads from the target id rather
// than scanning through everything before it, so an intersection with a small list is cheap.
class stream {
public:
    stream(id_fetch fetch, std::optional<std::int64_t> after, std::size_t chunk)
        : fetch_(std::move(fetch)), last_(after), chunk_(chunk) {}

    // The smallest unread id, or nullopt at the end.
    asio::awaitable<core::result<std::optional<std::int64_t>>> async_head(std::uint64_t& scanned) {
        if (at_ < buf_.size()) co_return std::optional<std::int64_t>{buf_[at_]};
        if (exhausted_) co_return std::optional<std::int64_t>{};
        auto r = co_await fetch_(last_, chunk_);
        if (!r) co_return r.error();
        buf_ = std::move(r.value());
        at_ = 0;
        scanned += buf_.size();
        exhausted_ = buf_.size() < chunk_;
        if (!buf_.empty()) last_ = buf_.back();
        if (buf_.empty()) co_return std::optional<std::int64_t>{};
        co_return std::optional<std::int64_t>{buf_[0]};
    }
    void pop() {
        CAIRN_ASSERT(at_ < buf_.size());
        ++at_;
    }
    // Drops every id below x.
    void skip_below(std::int64_t x) {
        while (at_ < buf_.size() && buf_[at_] < x) ++at_;
        if (at_ == buf_.size() && !exhausted_ && (!last_ || *last_ < x - 1)) last_ = x - 1;
    }

private:
    id_fetch fetch_;
    std::optional<std::int64_t> last_;  // the greatest id fetched (or skipped to)
    std::size_t chunk_;
    std::vector<std::int64_t> buf_;
    std::size_t at_ = 0;
    bool exhausted_ = false;
};

}  // namespace

std::optional<set_op> set_op_from_name(std::string_view name) noexcept {
    if (name == "intersect") return set_op::intersect;
    if (name == "union") return set_op::unite;
    if (name == "difference") return set_op::subtract;
    return std::nullopt;
}

asio::awaitable<core::result<set_page>> async_merge_sets(set_op op, std::vector<id_fetch> fetches,
                                                         std::optional<std::int64_t> after, std::size_t limit,
                                                         std::uint64_t scan_budget) {
    CAIRN_ASSERT(!fetches.empty());
    CAIRN_ASSERT(limit >= 1);
    const std::size_t chunk = std::clamp<std::size_t>(limit + 1, 64, 1000);
    std::vector<stream> streams;
    streams.reserve(fetches.size());
    for (auto& f : fetches) streams.emplace_back(std::move(f), after, chunk);

    set_page page;
    std::vector<std::optional<std::int64_t>> heads(streams.size());
    // Reads every stream's head; false (with page.scanned past the budget) means stop.
    auto load_heads = [&]() -> asio::awaitable<core::result<void>> {
        for (std::size_t i = 0; i < streams.size(); ++i) {
            auto h = co_await streams[i].async_head(page.scanned);
            if (!h) co_return h.error();
            heads[i] = h.value();
        }
        if (page.scanned > scan_budget) co_return core::errc::too_large;
        co_return core::success();
    };
    // One more id than the page holds tells whether another page exists.
    while (page.ids.size() <= limit) {
        if (auto r = co_await load_heads(); !r) co_return r.error();
        std::optional<std::int64_t> emit;
        bool done = false;
        switch (op) {
            case set_op::unite: {
                std::optional<std::int64_t> least;
                for (const auto& h : heads) {
                    if (h && (!least || *h < *least)) least = h;
                }
                if (!least) {
                    done = true;
                    break;
                }
                for (std::size_t i = 0; i < streams.size(); ++i) {
                    if (heads[i] == least) streams[i].pop();
                }
                emit = least;
                break;
            }
            case set_op::intersect: {
                std::int64_t greatest = INT64_MIN;
                for (const auto& h : heads) {
                    if (!h) {
                        done = true;
                        break;
                    }
                    greatest = std::max(greatest, *h);
                }
                if (done) break;
                if (std::all_of(heads.begin(), heads.end(), [&](const auto& h) { return *h == greatest; })) {
                    for (auto& s : streams) s.pop();
                    emit = greatest;
                } else {
                    for (auto& s : streams) s.skip_below(greatest);
                }
                break;
            }
            case set_op::subtract: {
                if (!heads[0]) {
                    done = true;
                    break;
                }
                const std::int64_t x = *heads[0];
                bool behind = false;
                for (std::size_t i = 1; i < streams.size(); ++i) {
                    if (heads[i] && *heads[i] < x) {
                        streams[i].skip_below(x);
                        behind = true;
                    }
                }
                if (behind) break;  // read the other heads again, now at or past x
                streams[0].pop();
                const bool excluded = std::any_of(heads.begin() + 1, heads.end(), [&](const auto& h) { return h == x; });
                if (!excluded) emit = x;
                break;
            }
        }
        if (done) break;
        if (emit) page.ids.push_back(*emit);
    }
    if (page.ids.size() > limit) {
        page.ids.pop_back();
        page.more = true;
    }
    co_return page;
}

}  // namespace cairn::net
