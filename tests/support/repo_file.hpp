// A file of the repository (docs' examples the tests load, so that the docs and the tests share one
// source of truth), read from $CAIRN_REPO (scripts/test sets it; the working directory otherwise).
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace cairn::test {

// The file's text, or "" if it cannot be read.
inline std::string repo_file(const std::string& path) {
    const char* repo = std::getenv("CAIRN_REPO");
    std::ifstream in(std::string(repo ? repo : ".") + "/" + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace cairn::test
