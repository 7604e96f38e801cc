// The WebSocket API with an off-the-shelf client: tests/ws/node_client.js on Debian's node-ws
// sends 1,000 pipelined JSON writes and 1,000 pipelined msgpack reads on one connection to the
// real cairnd. Without node the test skips, unless CI=true, where it fails (scripts/setup
// installs nodejs and node-ws).
#include "tests/support/e2e.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>


namespace cairn::test {
namespace {

TEST(ws_node_client, pipelines_json_and_msgpack_through_node_ws) {
    CAIRN_REQUIRE_SHARDS(2u);
    const auto [has_node, which] = run_capture("command -v node && node -e \"require('ws')\" || node -e \"require('/usr/share/nodejs/ws')\"");
    if (has_node != 0) {
        if (running_in_ci()) FAIL() << "node or node-ws is missing under CI=true (scripts/setup installs them): " << which;
        GTEST_SKIP() << "node or node-ws is not installed: " << which;
    }
    fresh_database("cairn_e2e_ws_node");
    cairnd_options o;
    o.database = "cairn_e2e_ws_node";
    // The client sends all 1,000 reads at once; reads with ?after= wait for apply, so on a busy
    // machine more than the default 256 are in flight (each over the limit would be a 429).
    o.extra_toml = "[limits]\nws_in_flight_max = 2048\n";
    cairnd_process gw(o);
    ASSERT_TRUE(gw.start()) << gw.log_tail();
    const auto [rc, out] = run_capture(fmt::format("node '{}/tests/ws/node_client.js' {}", CAIRN_SOURCE_DIR, gw.port()));
    EXPECT_EQ(rc, 0) << out << "\n" << gw.log_tail();
    EXPECT_NE(out.find("ok: 1000 JSON writes and 1000 msgpack reads pipelined"), std::string::npos) << out;
    EXPECT_EQ(gw.terminate(), 0) << gw.log_tail();
}

}  // namespace
}  // namespace cairn::test
