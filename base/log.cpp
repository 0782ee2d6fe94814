// Component loggers on stderr, so stdout stays free for command output.
#include "base/log.hpp"

#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace glassbox::base {

std::shared_ptr<spdlog::logger> component_logger(const std::string& component) {
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    if (auto existing = spdlog::get(component)) return existing;
    auto logger = spdlog::stderr_color_mt(component);
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %n %v");
    return logger;
}

bool set_log_level(const std::string& level) {
    const auto parsed = spdlog::level::from_str(level);
    if (parsed == spdlog::level::off && level != "off") return false;
    spdlog::set_level(parsed);
    return true;
}

}  // namespace glassbox::base
