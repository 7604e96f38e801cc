#include "core/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace cairn::core::detail {

void assert_fail(const char* cond, const char* file, int line) noexcept {
    std::fprintf(stderr, "cairn: assertion failed: %s at %s:%d\n", cond, file, line);
    std::fflush(stderr);
    std::abort();
}

}  // namespace cairn::core::detail
