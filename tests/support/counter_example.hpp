// The counter metrics of docs/examples/counters.toml, loaded for tests (one source of truth
// for the docs' example and the tests).
#pragma once

#include "core/config.hpp"
#include "tests/support/repo_file.hpp"

#include <gtest/gtest.h>

#include <string>

namespace cairn::test {

inline std::string counter_example_toml() { return repo_file("docs/examples/counters.toml"); }

inline core::counter_catalog counter_example_catalog() {
    const auto text = counter_example_toml();
    EXPECT_FALSE(text.empty()) << "docs/examples/counters.toml not found (CAIRN_REPO)";
    auto c = core::parse_config(text, "counters.toml");
    EXPECT_TRUE(c.has_value()) << c.error();
    return c ? c.value().counters : core::counter_catalog{};
}

}  // namespace cairn::test
