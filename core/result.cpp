#include "core/result.hpp"

#include <string>

namespace cairn::core {
namespace {

class category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "cairn"; }
    std::string message(int ev) const override {
        switch (static_cast<errc>(ev)) {
            case errc::ok: return "ok";
            case errc::bad_request: return "bad request";
            case errc::not_found: return "not found";
            case errc::journal_full: return "journal full";
            case errc::journal_failed: return "journal failed; restart required";
            case errc::journal_corrupt: return "journal record corrupt";
            case errc::shard_unavailable: return "shard unavailable";
            case errc::shard_timeout: return "shard timeout";
            case errc::shard_retry: return "shard asks to retry (deadlock or lock wait)";
            case errc::shard_rejected: return "shard rejected the operation";
            case errc::overloaded: return "overloaded";
            case errc::shutting_down: return "shutting down";
            case errc::timeout: return "timeout";
            case errc::unauthorized: return "unauthorized";
            case errc::forbidden: return "forbidden";
            case errc::too_large: return "too large";
            case errc::conflict: return "conflict";
            case errc::op_expired:
                return "op older than counters.op_ids_keep_hours: refused, since it may have been applied and "
                       "forgotten (re-inject it only if it never was)";
            case errc::undeclared: return "the op's counter metric is not declared in this gateway's config";
            case errc::disk_full: return "the journal's disk is full";
        }
        return "unknown cairn error " + std::to_string(ev);
    }
};

}  // namespace

const boost::system::error_category& cairn_category() noexcept {
    static const category instance;
    return instance;
}

}  // namespace cairn::core
