// The counter metrics of docs/examples/counters.toml, loaded for tests (one source of truth
// for the docs' example and the tests), and the model of what a metric's tables hold.
#pragma once

#include "core/config.hpp"
#include "core/counters.hpp"
#include "core/op.hpp"
#include "tests/support/repo_file.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace cairn::test {

inline std::string counter_example_toml() { return repo_file("docs/examples/counters.toml"); }

inline core::counter_catalog counter_example_catalog() {
    const auto text = counter_example_toml();
    EXPECT_FALSE(text.empty()) << "docs/examples/counters.toml not found (CAIRN_REPO)";
    auto c = core::parse_config(text, "counters.toml");
    EXPECT_TRUE(c.has_value()) << c.error();
    return c ? c.value().counters : core::counter_catalog{};
}

// (table, key values) -> count: the rows of a metric's tables.
using counter_rows = std::map<std::pair<std::string, std::vector<std::string>>, std::int64_t>;

// The model: every op (a counter_op of m) once, summed per table and key. Zero sums are left out
// (a row may exist at zero after negative deltas; absence and zero mean the same count).
inline counter_rows counter_model_of(const core::counter_metric& m, const std::vector<core::op>& ops) {
    counter_rows out;
    for (const auto& o : ops) {
        const auto& c = std::get<core::counter_op>(o.body);
        for (const auto& t : m.tables) {
            std::vector<std::string> key;
            for (int k : t.key) {
                key.push_back(k == core::counter_key_time ? std::to_string(core::bucket_start_ms(c.time_ms, t.granularity))
                                                          : c.dimensions[static_cast<std::size_t>(k)]);
            }
            out[{t.name, key}] += c.delta;
        }
    }
    std::erase_if(out, [](const auto& kv) { return kv.second == 0; });
    return out;
}

}  // namespace cairn::test
