// Files built into cairnd: the API description (docs/openapi.json, docs/asyncapi.json) and the
// dashboard's static files (ui/), embedded at build time by cmake/embed_files.cmake so that a
// binary serves them with nothing installed beside it. add_asset_routes (net/routes.hpp) serves
// them; the drift test reads the OpenAPI document from here too.
#pragma once

#include <span>
#include <string_view>

namespace cairn::net {

struct embedded_file {
    std::string_view name;   // its path in the repo, e.g. "ui/app.js" or "docs/openapi.json"
    std::string_view bytes;
};

// Every embedded file, in the order the build listed them.
std::span<const embedded_file> embedded_files() noexcept;

// The file of that name, or nullptr.
const embedded_file* find_embedded_file(std::string_view name) noexcept;

// The Content-Type for a file name by its extension (application/octet-stream when unknown).
std::string_view content_type_for(std::string_view name) noexcept;

}  // namespace cairn::net
