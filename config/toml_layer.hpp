// A strict TOML settings file (toml++): every key must be a known setting of the right type, and
// every error names the file, line and key.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "config/resolve.hpp"
#include "config/setting.hpp"

namespace glassbox::config {

// The settings `text` gives; `path` names it in origins and errors. InvalidRequest, as one line
// starting with "<path>:<line>:", for a TOML syntax error, an unknown table or key (with "did you
// mean" when a known one is close), or a value of the wrong type or out of bounds:
//   /root/.glassbox/config.toml:12: broker.heartbeat_ms: expected a positive integer, got "fast"
base::Result<Layer> parse_toml(const Registry& registry, std::string_view text,
                               const std::string& path);

// The same for a file; a missing file is an empty layer. An unreadable one is InvalidRequest too.
base::Result<Layer> load_toml_file(const Registry& registry, const std::filesystem::path& path);

}  // namespace glassbox::config
