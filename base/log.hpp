// One spdlog logger per component, writing key=value lines (or JSON lines) to stderr; a log call
// never throws.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

namespace glassbox::base {

// The logger named `component` ("broker", "worker.echo", "client"); created on first use.
std::shared_ptr<spdlog::logger> component_logger(const std::string& component);

// Sets the level of every logger, present and future: "trace".."off". False for an unknown level.
bool set_log_level(const std::string& level);

// How lines are written, for every logger present and future:
//   "human": `2024-05-01T12:00:00.123 info broker event=bound endpoint=...` (the default);
//   "json":  one object per line for log collectors: {"time" (UTC), "level", "component",
//            "msg" (the whole message), and each key=value field of the message, and of the
//            thread's LogFields, as a string member}.
// False for an unknown format.
bool set_log_format(const std::string& format);

// Fields that every log line written by this thread carries while it lives (the request a worker
// thread serves, its trace session): appended as key=value to human lines, as members to JSON
// ones, unless the message names the key itself. Scopes nest; the inner one's fields go with it.
class LogFields {
public:
    LogFields();
    ~LogFields();
    LogFields(const LogFields&) = delete;
    LogFields& operator=(const LogFields&) = delete;

    // Sets (or replaces) `key` in this scope.
    void set(std::string_view key, std::string value);

private:
    std::size_t begin_;  // where this scope's fields start in the thread's list
};

// Sets `key` in the innermost LogFields scope of this thread; nothing without one.
void set_log_field(std::string_view key, std::string value);

// The calling thread's fields, outer scopes first (for tests).
std::vector<std::pair<std::string, std::string>> log_fields();

// The key=value fields of a message, in order: `key` is a letter or `_` and then letters,
// digits, `_`, `.` or `-`; a value runs to the next space, or is in double quotes (to the next
// quote followed by a space or the end). Other words are not fields.
std::vector<std::pair<std::string, std::string>> message_fields(std::string_view message);

}  // namespace glassbox::base
