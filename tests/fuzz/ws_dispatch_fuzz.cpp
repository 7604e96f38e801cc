// Fuzz target: WebSocket messages through the real dispatch of an in-process cairnd
// (tests/fuzz/support/gateway.hpp): upgrade of /v1/ws, the message envelope (JSON text and msgpack
// binary frames), the router and every route behind it, answers rendered for either frame type.
//
// Input: a flags byte, then frames separated by the 4 bytes 1E 1E 1E 1E; a frame's first byte
// chooses its type (even: text, odd: binary), the rest is its payload. Flags bit 0: close the
// connection right after sending (requests still in flight when it closes), else wait for the
// answers first.
//
// One connection serves many inputs (connecting and upgrading costed more than most inputs do): an
// input that waits for its answers leaves nothing running on it, so the next input finds the session
// as a new one would be. The harness opens a new connection after an input that closed it (flag bit
// 0), that the gateway closed (e.g. 1009), or that started a subscription (an answer with "event":
// it stays on the connection), and every 256 inputs. What must hold:
//   - the gateway never crashes (ASan, UBSan) and never hangs: every frame gets its answer (or the
//     gateway closes the connection, e.g. 1009 for a frame over its size) within 8 s (unless this
//     process was starved of the CPU meanwhile: cairn::fuzz::starved_since);
//   - every answer is an object with "id" and an integer "status" (JSON for a text frame, msgpack
//     for a binary one);
//   - it still serves a new connection afterwards (checked every 128 inputs).
#include "tests/fuzz/support/gateway.hpp"
#include "tests/support/ws_client.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

constexpr std::string_view separator = "\x1e\x1e\x1e\x1e";
constexpr std::size_t frames_max = 64;

struct frame {
    std::string_view payload;
    bool binary = false;
};

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "ws_dispatch_fuzz: %s\n", what.c_str());
    std::abort();
}

std::vector<frame> split_frames(std::string_view in) {
    std::vector<frame> out;
    while (!in.empty() && out.size() < frames_max) {
        const auto end = in.find(separator);
        const auto chunk = in.substr(0, end);
        if (!chunk.empty()) out.push_back({chunk.substr(1), (static_cast<unsigned char>(chunk[0]) & 1) != 0});
        if (end == std::string_view::npos) break;
        in.remove_prefix(end + separator.size());
    }
    return out;
}

// Checks an answer; true if it is a subscription's event (the subscription goes on).
bool check_answer(const cairn::test::ws_frame& f) {
    const auto a = f.binary ? nlohmann::json::from_msgpack(f.data, true, false) : nlohmann::json::parse(f.data, nullptr, false);
    if (a.is_discarded() || !a.is_object()) fail("an answer that is not a " + std::string(f.binary ? "msgpack" : "JSON") + " object: " + f.data);
    if (!a.contains("id") || !a.contains("status") || !a["status"].is_number_integer()) fail("an answer without id or status: " + a.dump());
    return a.contains("event");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const bool close_at_once = (data[0] & 1) != 0;
    const auto frames = split_frames(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));

    static std::unique_ptr<cairn::test::ws_client> ws;
    static std::uint64_t inputs_on_it = 0;
    // A failed upgrade is tried twice more, 100 ms apart (a long campaign once met a moment where
    // the machine's loopback connects failed for every process at once); the third failure stops.
    for (int attempt = 0; !ws; ++attempt) {
        ws = std::make_unique<cairn::test::ws_client>(cairn::fuzz::gateway_port(), std::chrono::seconds(8));
        if (auto r = ws->connect(std::string(cairn::fuzz::admin_token)); !r) {
            if (attempt == 2) fail("the upgrade failed: " + r.error().message() + " (HTTP status " + std::to_string(ws->handshake_status()) + "; " + cairn::fuzz::gateway_vitals() + ")");
            ws.reset();
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        inputs_on_it = 0;
    }
    bool keep = !close_at_once && ++inputs_on_it < 256;
    std::size_t sent = 0;
    for (const auto& f : frames) {
        auto r = f.binary ? ws->send_binary(f.payload) : ws->send_text(f.payload);
        if (!r) {
            keep = false;  // the gateway closed the connection (e.g. a frame over its size)
            break;
        }
        ++sent;
    }
    if (!close_at_once) {
        for (std::size_t answers = 0; answers < sent; ++answers) {
            const auto waited_at = cairn::fuzz::runqueue_wait();
            auto a = ws->read();
            if (!a) {
                // A read that timed out while this process was starved of the CPU (a campaign at the
                // lowest priority beside a busy machine) says nothing about the gateway: a new connection.
                if (a.error() == cairn::core::errc::timeout && !cairn::fuzz::starved_since(waited_at, std::chrono::seconds(8))) {
                    fail("no answer within 8 s");
                }
                keep = false;  // closed by the gateway (or starved)
                break;
            }
            if (check_answer(a.value())) keep = false;  // a subscription runs on it
        }
    }
    if (!keep) {
        ws->close();
        ws.reset();
    }
    cairn::fuzz::check_still_serving("ws_dispatch_fuzz");
    return 0;
}
