// One spdlog logger per component, writing key=value lines to stderr; a log call never throws.
#pragma once

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

namespace glassbox::base {

// The logger named `component` ("broker", "worker.echo", "client"); created on first use.
std::shared_ptr<spdlog::logger> component_logger(const std::string& component);

// Sets the level of every logger, present and future: "trace".."off". False for an unknown level.
bool set_log_level(const std::string& level);

}  // namespace glassbox::base
