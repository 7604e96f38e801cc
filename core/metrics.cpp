#include "core/metrics.hpp"

#include "core/assert.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace cairn::core {

histogram::histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<std::uint64_t>[bounds_.size() + 1]) {
    CAIRN_ASSERT(std::is_sorted(bounds_.begin(), bounds_.end()));
    for (std::size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

std::vector<double> histogram::latency_bounds() {
    return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::vector<double> histogram::size_bounds() {
    std::vector<double> b;
    for (double v = 1; v <= 65536; v *= 2) b.push_back(v);
    return b;
}

void histogram::observe(double v) noexcept {
    const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
    buckets_[static_cast<std::size_t>(it - bounds_.begin())].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<std::uint64_t> histogram::cumulative_counts() const {
    std::vector<std::uint64_t> out(bounds_.size() + 1);
    std::uint64_t total = 0;
    for (std::size_t i = 0; i <= bounds_.size(); ++i) {
        total += buckets_[i].load(std::memory_order_relaxed);
        out[i] = total;
    }
    return out;
}

struct registry::family {
    std::string name;
    std::string help;
    const char* type;
    struct series {
        labels l;
        std::unique_ptr<counter> c;
        std::unique_ptr<gauge> g;
        std::unique_ptr<histogram> h;
        std::function<double()> fn;
        const histogram* external = nullptr;
    };
    std::vector<series> members;

    series* find(const labels& l) {
        for (auto& s : members) {
            if (s.l == l) return &s;
        }
        return nullptr;
    }
};

registry::registry() = default;
registry::~registry() = default;

registry::family& registry::family_for(const std::string& name, const std::string& help, const char* type) {
    for (auto& f : families_) {
        if (f->name == name) {
            CAIRN_ASSERT(std::string_view(f->type) == type);
            return *f;
        }
    }
    families_.push_back(std::make_unique<family>(family{name, help, type, {}}));
    return *families_.back();
}

counter& registry::add_counter(const std::string& name, const std::string& help, const labels& l) {
    std::lock_guard lock(mu_);
    auto& f = family_for(name, help, "counter");
    if (auto* s = f.find(l)) return *s->c;
    f.members.push_back({l, std::make_unique<counter>(), nullptr, nullptr, nullptr, nullptr});
    return *f.members.back().c;
}

gauge& registry::add_gauge(const std::string& name, const std::string& help, const labels& l) {
    std::lock_guard lock(mu_);
    auto& f = family_for(name, help, "gauge");
    if (auto* s = f.find(l)) {
        CAIRN_ASSERT(s->g != nullptr);
        return *s->g;
    }
    f.members.push_back({l, nullptr, std::make_unique<gauge>(), nullptr, nullptr, nullptr});
    return *f.members.back().g;
}

histogram& registry::add_histogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                                   const labels& l) {
    std::lock_guard lock(mu_);
    auto& f = family_for(name, help, "histogram");
    if (auto* s = f.find(l)) return *s->h;
    f.members.push_back({l, nullptr, nullptr, std::make_unique<histogram>(std::move(bounds)), nullptr, nullptr});
    return *f.members.back().h;
}

void registry::add_callback_gauge(const std::string& name, const std::string& help, const labels& l,
                                  std::function<double()> fn) {
    std::lock_guard lock(mu_);
    auto& f = family_for(name, help, "gauge");
    CAIRN_ASSERT(f.find(l) == nullptr);
    f.members.push_back({l, nullptr, nullptr, nullptr, std::move(fn), nullptr});
}

void registry::add_callback_counter(const std::string& name, const std::string& help, const labels& l,
                                    std::function<double()> fn) {
    std::lock_guard lock(mu_);
    auto& f = family_for(name, help, "counter");
    CAIRN_ASSERT(f.find(l) == nullptr);
    f.members.push_back({l, nullptr, nullptr, nullptr, std::move(fn), nullptr});
}

void registry::attach_histogram(const std::string& name, const std::string& help, const labels& l,
                                const histogram& h) {
    std::lock_guard lock(mu_);
    auto& f = family_for(name, help, "histogram");
    CAIRN_ASSERT(f.find(l) == nullptr);
    f.members.push_back({l, nullptr, nullptr, nullptr, nullptr, &h});
}

namespace {

void append_escaped(std::string& out, std::string_view v) {
    for (char c : v) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
}

std::string render_labels(const labels& l, const char* extra_key = nullptr, const std::string& extra_value = {}) {
    if (l.empty() && !extra_key) return {};
    std::string out = "{";
    bool first = true;
    for (const auto& [k, v] : l) {
        if (!first) out += ',';
        first = false;
        out += k;
        out += "=\"";
        append_escaped(out, v);
        out += '"';
    }
    if (extra_key) {
        if (!first) out += ',';
        out += extra_key;
        out += "=\"";
        out += extra_value;
        out += '"';
    }
    out += '}';
    return out;
}

std::string format_value(double v) {
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    if (std::isnan(v)) return "NaN";
    return fmt::format("{}", v);
}

}  // namespace

std::string registry::render() const {
    std::lock_guard lock(mu_);
    std::string out;
    out.reserve(4096);
    for (const auto& f : families_) {
        out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f->name, f->help, f->name, f->type);
        for (const auto& s : f->members) {
            if (s.c) {
                out += fmt::format("{}{} {}\n", f->name, render_labels(s.l), s.c->value());
            } else if (s.g) {
                out += fmt::format("{}{} {}\n", f->name, render_labels(s.l), format_value(s.g->value()));
            } else if (s.fn) {
                out += fmt::format("{}{} {}\n", f->name, render_labels(s.l), format_value(s.fn()));
            } else if (s.h || s.external) {
                const histogram& h = s.h ? *s.h : *s.external;
                const auto counts = h.cumulative_counts();
                const auto& bounds = h.bounds();
                for (std::size_t i = 0; i < bounds.size(); ++i) {
                    out += fmt::format("{}_bucket{} {}\n", f->name, render_labels(s.l, "le", format_value(bounds[i])),
                                       counts[i]);
                }
                out += fmt::format("{}_bucket{} {}\n", f->name, render_labels(s.l, "le", "+Inf"), counts.back());
                out += fmt::format("{}_sum{} {}\n", f->name, render_labels(s.l), format_value(h.sum()));
                out += fmt::format("{}_count{} {}\n", f->name, render_labels(s.l), counts.back());
            }
        }
    }
    return out;
}

}  // namespace cairn::core
