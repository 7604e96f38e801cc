// Runs the real `cairn` binary for the CLI tests (CAIRN_CAIRN_PATH is defined for the
// integration tests only). Tests only.
#pragma once

#include "tests/support/cairnd_process.hpp"

#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace cairn::test {

struct cli_run {
    int code = -1;
    std::string out;
    std::string err;

    nlohmann::json json() const { return nlohmann::json::parse(out); }
};

inline std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) {
        if (c == '\'') {
            q += "'\\''";
        } else {
            q += c;
        }
    }
    return q + "'";
}

// Runs the program at path with args and the environment assignments in env (only those:
// CAIRN_URL and CAIRN_TOKEN of the test's own environment are cleared), stdin from /dev/null.
inline cli_run run_program(const std::string& path, const std::vector<std::string>& args,
                           const std::map<std::string, std::string>& env = {}) {
    const std::string err_dir = make_temp_dir("cairn-cli-err");
    const std::string err_path = err_dir + "/stderr";
    std::string cmd = "env -u CAIRN_URL -u CAIRN_TOKEN";
    for (const auto& [k, v] : env) cmd += " " + k + "=" + shell_quote(v);
    cmd += " " + shell_quote(path);
    for (const auto& a : args) cmd += " " + shell_quote(a);
    cmd += " </dev/null 2>" + shell_quote(err_path);
    cli_run r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = ::pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(err_path);
    std::stringstream ss;
    ss << in.rdbuf();
    r.err = ss.str();
    std::error_code ignored;
    std::filesystem::remove_all(err_dir, ignored);
    return r;
}

inline cli_run run_cairn(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
    return run_program(CAIRN_CAIRN_PATH, args, env);
}

}  // namespace cairn::test
