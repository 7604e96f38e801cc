#include "net/set_merge.hpp"

#include "core/assert.hpp"

#include <algorithm>
#include <memory>

namespace cairn::net {
namespace {

namespace asio = boost::asio;

// What a page or count may read, shared by every leaf of the expression.
struct scan_meter {
    std::uint64_t scanned = 0;
    std::uint64_t budget = 0;
};

// A sorted stream of keys: a leaf's buffered reads, or an operation over other streams.
class stream {
public:
    virtual ~stream() = default;
    // The smallest unread key, or nullopt at the end.
    virtual asio::awaitable<core::result<std::optional<std::int64_t>>> async_head(scan_meter& meter) = 0;
    // Drops the head (async_head returned a key).
    virtual void pop() = 0;
    // Drops every key below x.
    virtual void skip_below(std::int64_t x) = 0;
};

// One leaf with a buffered chunk. Skipping ahead re-reads from the target key rather than
// scanning through everything before it, so an intersection with a small list is cheap.
class leaf_stream final : public stream {
public:
    leaf_stream(const id_fetch& fetch, std::optional<std::int64_t> after, std::size_t chunk)
        : fetch_(fetch), last_(after), chunk_(chunk) {}

    asio::awaitable<core::result<std::optional<std::int64_t>>> async_head(scan_meter& meter) override {
        if (at_ < buf_.size()) co_return std::optional<std::int64_t>{buf_[at_]};
        if (exhausted_) co_return std::optional<std::int64_t>{};
        auto r = co_await fetch_(last_, chunk_);
        if (!r) co_return r.error();
        buf_ = std::move(r.value());
        at_ = 0;
        meter.scanned += buf_.size();
        if (meter.scanned > meter.budget) co_return core::errc::too_large;
        exhausted_ = buf_.size() < chunk_;
        if (!buf_.empty()) last_ = buf_.back();
        if (buf_.empty()) co_return std::optional<std::int64_t>{};
        co_return std::optional<std::int64_t>{buf_[0]};
    }
    void pop() override {
        CAIRN_ASSERT(at_ < buf_.size());
        ++at_;
    }
    void skip_below(std::int64_t x) override {
        while (at_ < buf_.size() && buf_[at_] < x) ++at_;
        if (at_ == buf_.size() && !exhausted_ && (!last_ || *last_ < x - 1)) last_ = x - 1;
    }

private:
    const id_fetch& fetch_;
    std::optional<std::int64_t> last_;  // the greatest key fetched (or skipped to)
    std::size_t chunk_;
    std::vector<std::int64_t> buf_;
    std::size_t at_ = 0;
    bool exhausted_ = false;
};

std::unique_ptr<stream> make_stream(const set_expr& e, std::optional<std::int64_t> after, std::size_t chunk);

// An operation over its operands' streams. Its head is computed by advancing the operands past
// it and kept until popped (or skipped).
class op_stream final : public stream {
public:
    op_stream(const set_expr& e, std::optional<std::int64_t> after, std::size_t chunk) : op_(e.op) {
        CAIRN_ASSERT(!e.operands.empty());
        for (const auto& o : e.operands) operands_.push_back(make_stream(o, after, chunk));
        heads_.resize(operands_.size());
    }

    asio::awaitable<core::result<std::optional<std::int64_t>>> async_head(scan_meter& meter) override {
        while (!head_ && !ended_) {
            for (std::size_t i = 0; i < operands_.size(); ++i) {
                auto h = co_await operands_[i]->async_head(meter);
                if (!h) co_return h.error();
                heads_[i] = h.value();
            }
            step();
        }
        co_return head_;
    }
    void pop() override {
        CAIRN_ASSERT(head_.has_value());
        head_.reset();
    }
    void skip_below(std::int64_t x) override {
        if (ended_ || (head_ && *head_ >= x)) return;
        head_.reset();  // the operands are already past it
        for (auto& o : operands_) o->skip_below(x);
    }

private:
    // One step of the merge over the operands' current heads: sets head_ or ended_, or moves
    // the operands on (the caller reads their heads again).
    void step() {
        switch (op_) {
            case set_op::unite: {
                std::optional<std::int64_t> least;
                for (const auto& h : heads_) {
                    if (h && (!least || *h < *least)) least = h;
                }
                if (!least) {
                    ended_ = true;
                    return;
                }
                for (std::size_t i = 0; i < operands_.size(); ++i) {
                    if (heads_[i] == least) operands_[i]->pop();
                }
                head_ = least;
                return;
            }
            case set_op::intersect: {
                std::int64_t greatest = INT64_MIN;
                for (const auto& h : heads_) {
                    if (!h) {
                        ended_ = true;
                        return;
                    }
                    greatest = std::max(greatest, *h);
                }
                if (std::all_of(heads_.begin(), heads_.end(), [&](const auto& h) { return *h == greatest; })) {
                    for (auto& o : operands_) o->pop();
                    head_ = greatest;
                } else {
                    for (auto& o : operands_) o->skip_below(greatest);
                }
                return;
            }
            case set_op::subtract: {
                if (!heads_[0]) {
                    ended_ = true;
                    return;
                }
                const std::int64_t x = *heads_[0];
                bool behind = false;
                for (std::size_t i = 1; i < operands_.size(); ++i) {
                    if (heads_[i] && *heads_[i] < x) {
                        operands_[i]->skip_below(x);
                        behind = true;
                    }
                }
                if (behind) return;  // read the other heads again, now at or past x
                operands_[0]->pop();
                const bool excluded = std::any_of(heads_.begin() + 1, heads_.end(), [&](const auto& h) { return h == x; });
                if (!excluded) head_ = x;
                return;
            }
        }
    }

    set_op op_;
    std::vector<std::unique_ptr<stream>> operands_;
    std::vector<std::optional<std::int64_t>> heads_;
    std::optional<std::int64_t> head_;
    bool ended_ = false;
};

std::unique_ptr<stream> make_stream(const set_expr& e, std::optional<std::int64_t> after, std::size_t chunk) {
    if (e.operands.empty()) {
        CAIRN_ASSERT(e.fetch != nullptr);
        return std::make_unique<leaf_stream>(e.fetch, after, chunk);
    }
    return std::make_unique<op_stream>(e, after, chunk);
}

}  // namespace

std::optional<set_op> set_op_from_name(std::string_view name) noexcept {
    if (name == "intersect") return set_op::intersect;
    if (name == "union") return set_op::unite;
    if (name == "difference") return set_op::subtract;
    return std::nullopt;
}

std::string_view set_op_name(set_op op) noexcept {
    switch (op) {
        case set_op::intersect: return "intersect";
        case set_op::unite: return "union";
        case set_op::subtract: return "difference";
    }
    return "union";
}

asio::awaitable<core::result<set_page>> async_merge_sets(const set_expr& expr, std::optional<std::int64_t> after,
                                                         std::size_t limit, std::uint64_t scan_budget) {
    CAIRN_ASSERT(limit >= 1);
    auto top = make_stream(expr, after, std::clamp<std::size_t>(limit + 1, 64, 1000));
    scan_meter meter{0, scan_budget};
    set_page page;
    // One more key than the page holds tells whether another page exists.
    while (page.ids.size() <= limit) {
        auto h = co_await top->async_head(meter);
        if (!h) co_return h.error();
        if (!h.value()) break;
        page.ids.push_back(*h.value());
        top->pop();
    }
    if (page.ids.size() > limit) {
        page.ids.pop_back();
        page.more = true;
    }
    page.scanned = meter.scanned;
    co_return page;
}

asio::awaitable<core::result<set_count>> async_count_set(const set_expr& expr, std::uint64_t scan_budget) {
    auto top = make_stream(expr, std::nullopt, 1000);
    scan_meter meter{0, scan_budget};
    set_count out;
    for (;;) {
        auto h = co_await top->async_head(meter);
        if (!h) co_return h.error();
        if (!h.value()) break;
        ++out.count;
        top->pop();
    }
    out.scanned = meter.scanned;
    co_return out;
}

}  // namespace cairn::net
