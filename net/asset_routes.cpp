// The routes of the embedded files (net/assets.hpp): the API description at /v1/openapi.json and
// /v1/asyncapi.json, and the dashboard at /ui/ (its files at /ui/{file}). Public like the health
// probes: they hold no data, and the dashboard asks for a token before it reads any.
#include "net/assets.hpp"
#include "net/routes.hpp"

#include "net/router.hpp"

#include <boost/beast/http/field.hpp>

#include <algorithm>

namespace cairn::net {

namespace asio = boost::asio;

const embedded_file* find_embedded_file(std::string_view name) noexcept {
    const auto files = embedded_files();
    const auto it = std::find_if(files.begin(), files.end(), [&](const embedded_file& f) { return f.name == name; });
    return it == files.end() ? nullptr : &*it;
}

std::string_view content_type_for(std::string_view name) noexcept {
    const auto dot = name.rfind('.');
    const std::string_view ext = dot == std::string_view::npos ? std::string_view{} : name.substr(dot + 1);
    if (ext == "html") return "text/html; charset=utf-8";
    if (ext == "js" || ext == "mjs") return "text/javascript; charset=utf-8";
    if (ext == "css") return "text/css; charset=utf-8";
    if (ext == "json") return "application/json";
    if (ext == "svg") return "image/svg+xml";
    if (ext == "png") return "image/png";
    if (ext == "ico") return "image/x-icon";
    if (ext == "txt") return "text/plain; charset=utf-8";
    return "application/octet-stream";
}

namespace {

response file_response(const embedded_file& f, const request& req) {
    response res{http::status::ok, req.version()};
    const std::string_view type = content_type_for(f.name);
    res.set(http::field::content_type, boost::beast::string_view(type.data(), type.size()));
    // The dashboard runs only its own files and talks only to this origin.
    res.set("Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
    res.set("X-Content-Type-Options", "nosniff");
    res.set(http::field::cache_control, "no-cache");
    res.keep_alive(req.keep_alive());
    res.body().assign(f.bytes.data(), f.bytes.size());
    res.prepare_payload();
    return res;
}

response not_embedded(const request& req, std::string_view what) {
    return problem(problems::not_found, std::string(what) + " is not built into this cairnd", std::nullopt, req.version(), req.keep_alive());
}

asio::awaitable<response> async_serve(route_context& ctx, std::string name) {
    const embedded_file* f = find_embedded_file(name);
    if (f == nullptr) co_return not_embedded(ctx.req, name);
    co_return file_response(*f, ctx.req);
}

}  // namespace

void add_asset_routes(router& r) {
    r.add(http::verb::get, "/v1/openapi.json", core::role::none,
          [](route_context& ctx) { return async_serve(ctx, "docs/openapi.json"); });
    r.add(http::verb::get, "/v1/asyncapi.json", core::role::none,
          [](route_context& ctx) { return async_serve(ctx, "docs/asyncapi.json"); });
    // /ui answers with a redirect to /ui/, so that the page's relative links resolve under /ui/.
    r.add(http::verb::get, "/ui", core::role::none, [](route_context& ctx) -> asio::awaitable<response> {
        response res{http::status::permanent_redirect, ctx.req.version()};
        res.set(http::field::location, "/ui/");
        res.keep_alive(ctx.req.keep_alive());
        res.prepare_payload();
        co_return res;
    });
    r.add(http::verb::get, "/ui/", core::role::none, [](route_context& ctx) { return async_serve(ctx, "ui/index.html"); });
    r.add(http::verb::get, "/ui/{file}", core::role::none, [](route_context& ctx) -> asio::awaitable<response> {
        // One path segment of the embedded folder: a name cannot climb out of it, and a name that
        // is not embedded (or percent-encoded) is simply not found.
        const std::string_view file = ctx.params.get("file").value_or("");
        co_return co_await async_serve(ctx, "ui/" + std::string(file));
    });
}

}  // namespace cairn::net
