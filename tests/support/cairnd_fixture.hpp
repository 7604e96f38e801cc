// A GoogleTest fixture that runs one real cairnd on a fresh database of the test shards and
// stops it after the test, printing its log when the test failed. Tests only.
#pragma once

#include "tests/support/cairnd_process.hpp"
#include "tests/support/e2e.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <string>

namespace cairn::test {

class cairnd_test : public ::testing::Test {
protected:
    // Creates db afresh on every test shard and starts cairnd on it with o (o.database is set).
    void start_cairnd(const std::string& db, cairnd_options o = {}) {
        fresh_database(db);
        o.database = db;
        cairnd_ = std::make_unique<cairnd_process>(std::move(o));
        ASSERT_TRUE(cairnd_->start()) << cairnd_->log_tail();
    }
    void TearDown() override {
        if (!cairnd_) return;
        if (HasFailure()) std::cerr << "cairnd log:\n" << cairnd_->log_tail() << "\n";
        EXPECT_EQ(cairnd_->terminate(), 0) << cairnd_->log_tail();
    }
    std::uint16_t port() const { return cairnd_->port(); }
    // One request to this cairnd (or to the one on port `on`); a test failure and an empty reply
    // when nothing answers.
    simple_reply send(const std::string& method, const std::string& target, const std::string& body = "",
                      std::uint16_t on = 0) {
        auto r = http_request(on ? on : port(), method, target, body);
        if (!r) {
            ADD_FAILURE() << method << " " << target << ": no answer";
            return {};
        }
        return *r;
    }

    std::unique_ptr<cairnd_process> cairnd_;
};

}  // namespace cairn::test
