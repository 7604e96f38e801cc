#include "net/detail/answers.hpp"

#include <nlohmann/json.hpp>

namespace cairn::net::detail {

response answer(const request& req, const nlohmann::json& j, http::status status) {
    return json_response(status, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), req);
}

response refuse(const request& req, const problem_type& type, std::string_view detail, std::optional<std::string_view> field) {
    return problem(type, detail, field, req.version(), req.keep_alive());
}

}  // namespace cairn::net::detail
