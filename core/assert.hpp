// CAIRN_ASSERT: a check for programmer errors that stays on in release builds. It logs
// file:line and the condition to stderr and aborts. Use one condition per assert.
#pragma once

namespace cairn::core::detail {
[[noreturn]] void assert_fail(const char* cond, const char* file, int line) noexcept;
}

#define CAIRN_ASSERT(cond)                                                      \
    do {                                                                        \
        if (!(cond)) [[unlikely]] {                                             \
            ::cairn::core::detail::assert_fail(#cond, __FILE__, __LINE__);      \
        }                                                                       \
    } while (false)
