// Waiting on a condition with a deadline: the tests' one polling loop.
//
// A test never sleeps to let something happen: it names the condition (an applied seq, a metric, a
// log line, a state) and waits for it here, so that it is as fast as the system and fails with a
// deadline instead of hanging. The sleeps left in the tests are a load's shape (a trickle of writes),
// a back-off between retries, or the time a test is about (a client that stays silent for longer
// than a timeout); each says so where it is.
#pragma once

#include <chrono>
#include <thread>

namespace cairn::test {

// Waits until pred() holds, checking it every `interval` (50 ms unless told); false once `timeout`
// has passed without it. pred() is always checked at least once, and once more after the deadline.
template <class Pred, class Rep, class Period>
bool wait_until(Pred pred, std::chrono::duration<Rep, Period> timeout,
                std::chrono::milliseconds interval = std::chrono::milliseconds(50)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() > deadline) return pred();
        std::this_thread::sleep_for(interval);
    }
    return true;
}

}  // namespace cairn::test
