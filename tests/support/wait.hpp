// Waiting on a condition with a deadline: the tests' one polling loop.
#pragma once

#include <chrono>
#include <thread>

namespace cairn::test {

// Waits until pred() holds, checking every 50 ms; false after timeout.
template <class Pred>
bool wait_until(Pred pred, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
}

}  // namespace cairn::test
