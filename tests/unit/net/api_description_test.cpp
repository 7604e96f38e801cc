// The API description cairnd serves (docs/openapi.json and docs/asyncapi.json, built into the binary)
// against the routes cairnd really has: every (method, pattern) of the router, as cairnd's main adds
// them, is an operation of openapi.json with the same path parameters and the role it needs
// (x-cairn-role), every described operation is a route, and the AsyncAPI document describes /v1/ws.
// Validity against the OpenAPI 3.1 and AsyncAPI 3.0 schemas is checked by tests/spec (npm validators).
#include <utility>  // Boost 1.74's awaitable.hpp forgets it.

#include "core/config.hpp"
#include "core/hlc.hpp"
#include "core/metrics.hpp"
#include "core/routing.hpp"
#include "indexing/cleaner.hpp"
#include "indexing/index_registry.hpp"
#include "journal/journal.hpp"
#include "net/assets.hpp"
#include "net/detail/ws_message.hpp"
#include "net/problem.hpp"
#include "net/gateway.hpp"
#include "net/http_server.hpp"
#include "net/router.hpp"
#include "net/routes.hpp"
#include "shards/shard_set.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/beast/http/verb.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace cairn::net {
namespace {

namespace asio = boost::asio;

// The {name}s of a pattern, in order.
std::vector<std::string> captures_of(std::string_view pattern) {
    std::vector<std::string> out;
    for (std::size_t open = pattern.find('{'); open != std::string_view::npos; open = pattern.find('{', open + 1)) {
        const auto close = pattern.find('}', open);
        out.emplace_back(pattern.substr(open + 1, close - open - 1));
    }
    return out;
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

// Everything cairnd's main wires before it adds the routes, over a journal in a temporary folder and
// two shards that are never contacted (adding routes only keeps references).
struct wired_router {
    std::string dir;
    core::config cfg;
    core::registry metrics;
    core::hlc clock{1};
    asio::io_context ioc{1};
    core::routing routing{core::route_table(1, core::shard_map::equal_ranges(2))};
    std::unique_ptr<journal::journal> jn;
    std::unique_ptr<shards::shard_set> shard_set;
    std::unique_ptr<gateway> gw;
    std::unique_ptr<indexing::index_registry> indexes;
    std::unique_ptr<indexing::cleaner> cleaner;
    router r;

    wired_router() {
        const char* tmp = std::getenv("TMPDIR");
        dir = std::string(tmp ? tmp : "/tmp") + "/cairn-api-description.XXXXXX";
        if (::mkdtemp(dir.data()) == nullptr) throw std::runtime_error("cannot create a temporary folder");
        auto parsed = core::parse_config("[journal]\npath = \"" + dir + "/journal\"\n"
                                         "[[shards]]\nport = 9\n[[shards]]\nport = 9\n");
        if (!parsed) throw std::runtime_error("bad config: " + parsed.error());
        cfg = std::move(parsed).value();
        journal::options jopts;
        jopts.path = cfg.journal_path;
        jopts.size_bytes_max = std::size_t{64} << 20;
        jopts.node_id = cfg.node_id;
        jopts.shard_count = 2;
        auto opened = journal::journal::open(jopts, clock);
        if (!opened) throw std::runtime_error("cannot open the journal: " + opened.error().message());
        jn = std::move(opened).value();
        shard_set = std::make_unique<shards::shard_set>(ioc.get_executor(), *jn, routing, cfg, metrics);
        gw = std::make_unique<gateway>(gateway{*jn, clock, routing, *shard_set, cfg.lim, metrics, &cfg.counters, &cfg.cells,
                                               &cfg.entities});
        indexes = std::make_unique<indexing::index_registry>(*shard_set, cfg.lim.query_timeout);
        gw->indexes = indexes.get();
        cleaner = std::make_unique<indexing::cleaner>(ioc.get_executor(), *jn, *shard_set, *indexes, cfg.lim, metrics);
        gw->index_cleaner = cleaner.get();
        add_api_routes(r, *gw);
    }
    ~wired_router() {
        cleaner.reset();
        indexes.reset();
        gw.reset();
        shard_set.reset();
        jn.reset();
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
    }
};

nlohmann::json embedded_json(std::string_view name) {
    const embedded_file* f = find_embedded_file(name);
    if (f == nullptr) throw std::runtime_error(std::string(name) + " is not built into cairnd");
    return nlohmann::json::parse(f->bytes);
}

struct operation_key {
    std::string method;  // lower case, as OpenAPI names it
    std::string path;
    auto operator<=>(const operation_key&) const = default;
};

TEST(api_description, every_route_is_described_with_its_parameters_and_role_and_nothing_else_is) {
    wired_router w;
    std::map<operation_key, std::string> routes;  // -> the role it needs
    for (const auto& info : w.r.routes()) {
        routes[{lower(to_string_view(http::to_string(info.method))), std::string(info.pattern)}] = std::string(core::role_name(info.required));
    }
    // The WebSocket upgrade is served by the HTTP server before the router; any role but none may open it.
    routes[{"get", std::string(http_server::upgrade_path)}] = "read";
    ASSERT_GT(routes.size(), 50u);

    const auto spec = embedded_json("docs/openapi.json");
    ASSERT_TRUE(spec.contains("openapi")) << "docs/openapi.json has no openapi field";
    EXPECT_EQ(spec["openapi"].get<std::string>().rfind("3.1", 0), 0u) << spec["openapi"];
    ASSERT_TRUE(spec.contains("paths") && spec["paths"].is_object());

    std::set<operation_key> described;
    for (const auto& [path, item] : spec["paths"].items()) {
        // Parameters may sit on the path item (shared by its operations) or on each operation.
        std::set<std::string> item_params;
        for (const auto& p : item.value("parameters", nlohmann::json::array())) {
            if (p.value("in", "") == "path") item_params.insert(p.value("name", ""));
        }
        for (const auto& [method, op] : item.items()) {
            if (method == "parameters" || method == "summary" || method == "description" || method == "servers") continue;
            const operation_key key{method, path};
            described.insert(key);
            const auto route = routes.find(key);
            if (route == routes.end()) {
                ADD_FAILURE() << "described but not a route of cairnd: " << method << " " << path;
                continue;
            }
            std::set<std::string> params = item_params;
            for (const auto& p : op.value("parameters", nlohmann::json::array())) {
                if (p.value("in", "") == "path") params.insert(p.value("name", ""));
            }
            const auto captures = captures_of(path);
            EXPECT_EQ(params, std::set<std::string>(captures.begin(), captures.end()))
                << method << " " << path << ": its path parameters are not the pattern's";
            EXPECT_EQ(op.value("x-cairn-role", std::string("(missing)")), route->second)
                << method << " " << path << ": x-cairn-role is not the role the route needs";
            EXPECT_TRUE(op.contains("responses") && !op["responses"].empty()) << method << " " << path << " has no responses";
        }
    }
    for (const auto& [key, role] : routes) {
        EXPECT_TRUE(described.count(key)) << "a route of cairnd that docs/openapi.json does not describe: " << key.method
                                          << " " << key.path << " (role " << role << ")";
    }
}

TEST(api_description, the_asyncapi_document_describes_the_websocket_endpoint) {
    const auto spec = embedded_json("docs/asyncapi.json");
    ASSERT_TRUE(spec.contains("asyncapi"));
    EXPECT_EQ(spec["asyncapi"], "3.0.0");
    bool found = false;
    const auto channels = spec.value("channels", nlohmann::json::object());
    for (const auto& [name, channel] : channels.items()) {
        if (channel.value("address", "") == http_server::upgrade_path) found = true;
    }
    EXPECT_TRUE(found) << "no channel of docs/asyncapi.json has the address " << http_server::upgrade_path;
    EXPECT_FALSE(spec.value("operations", nlohmann::json::object()).empty()) << "docs/asyncapi.json has no operations";
    // The request envelope has exactly the members the WebSocket parser takes.
    const auto request = spec["components"]["schemas"]["Request"];
    ASSERT_TRUE(request.contains("properties")) << "docs/asyncapi.json has no Request schema";
    std::set<std::string> described;
    for (const auto& [name, ignored] : request["properties"].items()) described.insert(name);
    std::set<std::string> parsed;
    for (const auto m : detail::ws_message_members) parsed.insert(std::string(m));
    EXPECT_EQ(described, parsed) << "the members of a WebSocket request in docs/asyncapi.json are not the parser's";
}

TEST(api_description, the_embedded_files_are_the_repos) {
    // What cairnd serves is what the repo holds (the build embeds them again when they change).
    const std::string repo = CAIRN_SOURCE_DIR;
    ASSERT_FALSE(embedded_files().empty());
    for (const auto& f : embedded_files()) {
        std::ifstream in(repo + "/" + std::string(f.name), std::ios::binary);
        ASSERT_TRUE(in) << f.name;
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        EXPECT_EQ(text.size(), f.bytes.size()) << f.name;
        EXPECT_TRUE(text == f.bytes) << f.name << " differs from the repo's (rebuild)";
    }
    EXPECT_NE(find_embedded_file("ui/index.html"), nullptr);
    EXPECT_EQ(content_type_for("ui/app.js"), "text/javascript; charset=utf-8");
    EXPECT_EQ(find_embedded_file("ui/../docs/openapi.json"), nullptr);
}

// docs/api.md's Errors table names every problem type cairn answers, with its status.
TEST(api_description, the_errors_table_of_the_docs_lists_every_problem_type) {
    std::ifstream in(std::string(CAIRN_SOURCE_DIR) + "/docs/api.md");
    ASSERT_TRUE(in);
    std::vector<std::string> rows;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("| ", 0) == 0) rows.push_back(line);
    }
    for (const auto& t : problem_catalogue()) {
        const std::string status = "| " + std::to_string(static_cast<int>(t.status)) + " |";
        const std::string slug = "`" + std::string(t.slug) + "`";
        const bool listed = std::any_of(rows.begin(), rows.end(), [&](const std::string& row) {
            return row.rfind(status, 0) == 0 && row.find(slug) != std::string::npos;
        });
        EXPECT_TRUE(listed) << "docs/api.md's Errors table has no row " << status << " ... " << slug << " ("
                            << t.title << ": " << t.when << ")";
    }
}

}  // namespace
}  // namespace cairn::net
