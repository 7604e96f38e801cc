// log_task_end counts a task as live, by name, for as long as any copy of its handler exists, so
// that a stop that does not finish can name what is pending (issue 19).
#include "core/log_task_end.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>

namespace cairn::core {
namespace {

std::size_t live(const std::string& name) {
    for (const auto& [n, count] : live_tasks()) {
        if (n == name) return count;
    }
    return 0;
}

TEST(log_task_end, a_task_is_live_while_a_copy_of_its_handler_exists) {
    EXPECT_EQ(live("test task a"), 0u);
    std::optional<log_task_end> first{log_task_end("test task a")};
    std::optional<log_task_end> copy = first;
    log_task_end other("test task b");
    EXPECT_EQ(live("test task a"), 1u);  // copies are one task
    EXPECT_EQ(live("test task b"), 1u);
    std::optional<log_task_end> second{log_task_end("test task a")};
    EXPECT_EQ(live("test task a"), 2u);
    const auto line = describe_live_tasks();
    EXPECT_NE(line.find("test task a x2"), std::string::npos) << line;
    EXPECT_NE(line.find("test task b"), std::string::npos) << line;

    (*first)(nullptr);  // run: logs; the task ends when the handler is gone
    (*copy)(std::make_exception_ptr(std::runtime_error("boom")));  // logged, never rethrown
    first.reset();
    EXPECT_EQ(live("test task a"), 2u);
    copy.reset();
    EXPECT_EQ(live("test task a"), 1u);
    second.reset();
    EXPECT_EQ(live("test task a"), 0u);
    EXPECT_EQ(describe_live_tasks().find("test task a"), std::string::npos);
}

}  // namespace
}  // namespace cairn::core
