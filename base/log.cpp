// Component loggers on stderr, so stdout stays free for command output; human or JSON lines, with
// the calling thread's fields (request, session) on each.
#include "base/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "base/json_string.hpp"
#include "base/utf8.hpp"

namespace glassbox::base {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

// The fields of this thread's LogFields scopes, outer first.
thread_local Fields t_fields;
// How many LogFields scopes are open on this thread: without one, set_log_field keeps nothing.
thread_local std::size_t t_scopes = 0;

std::atomic<bool> g_json{false};

constexpr std::string_view kHumanPattern = "%Y-%m-%dT%H:%M:%S.%e %^%l%$ %n %v%&";

bool is_key_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

bool is_key_char(char c) {
    return is_key_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

// True when the message has a `key=` field of its own (it then wins over the thread's).
bool names_field(std::string_view message, std::string_view key) {
    for (std::size_t at = message.find(key); at != std::string_view::npos;
         at = message.find(key, at + 1)) {
        const bool starts = at == 0 || message[at - 1] == ' ';
        const std::size_t after = at + key.size();
        if (starts && after < message.size() && message[after] == '=') return true;
    }
    return false;
}

void append(spdlog::memory_buf_t& dest, std::string_view text) {
    dest.append(text.data(), text.data() + text.size());
}

// A JSON string with its quotes; the text is made valid UTF-8 first (ill-formed bytes and
// control characters written as printable_utf8 writes them), so the shared writer takes it.
void append_json_string(spdlog::memory_buf_t& dest, std::string_view raw) {
    std::string quoted;
    base::append_json_string(quoted, printable_utf8(raw));
    append(dest, quoted);
}

std::string_view level_name(spdlog::level::level_enum level) {
    switch (level) {
        case spdlog::level::trace:
            return "trace";
        case spdlog::level::debug:
            return "debug";
        case spdlog::level::info:
            return "info";
        case spdlog::level::warn:
            return "warn";
        case spdlog::level::err:
            return "error";
        case spdlog::level::critical:
            return "critical";
        default:
            return "off";
    }
}

// `%&` in the human pattern: the thread's fields the message does not name, as " key=value".
class ThreadFieldsFlag final : public spdlog::custom_flag_formatter {
public:
    void format(const spdlog::details::log_msg& msg, const std::tm&,
                spdlog::memory_buf_t& dest) override {
        const std::string_view message(msg.payload.data(), msg.payload.size());
        for (const auto& [key, value] : t_fields) {
            if (names_field(message, key)) continue;
            dest.push_back(' ');
            append(dest, key);
            dest.push_back('=');
            const bool quote = value.empty() || value.find(' ') != std::string::npos;
            if (quote) dest.push_back('"');
            append(dest, value);
            if (quote) dest.push_back('"');
        }
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<ThreadFieldsFlag>();
    }
};

class JsonFormatter final : public spdlog::formatter {
public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        const std::string_view message(msg.payload.data(), msg.payload.size());
        append(dest, "{\"time\":");
        append_json_string(dest, utc_time(msg.time));
        append(dest, ",\"level\":");
        append_json_string(dest, level_name(msg.level));
        append(dest, ",\"component\":");
        append_json_string(dest, std::string_view(msg.logger_name.data(), msg.logger_name.size()));
        append(dest, ",\"msg\":");
        append_json_string(dest, message);
        Fields fields = message_fields(message);
        for (const auto& field : t_fields) {
            if (!names_field(message, field.first)) fields.push_back(field);
        }
        std::vector<std::string_view> written;
        for (const auto& [key, value] : fields) {
            // A member appears once (the message's own first), and never hides the fixed four.
            if (key == "time" || key == "level" || key == "component" || key == "msg") continue;
            bool seen = false;
            for (const auto& name : written) seen = seen || name == key;
            if (seen) continue;
            written.push_back(key);
            dest.push_back(',');
            append_json_string(dest, key);
            dest.push_back(':');
            append_json_string(dest, value);
        }
        append(dest, "}\n");
    }

    std::unique_ptr<spdlog::formatter> clone() const override {
        return std::make_unique<JsonFormatter>();
    }

private:
    static std::string utc_time(spdlog::log_clock::time_point time) {
        const auto since = time.time_since_epoch();
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since);
        const auto millis =
            std::chrono::duration_cast<std::chrono::milliseconds>(since - seconds).count();
        const std::time_t t = static_cast<std::time_t>(seconds.count());
        std::tm parts{};
        gmtime_r(&t, &parts);
        char text[40];
        const auto n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &parts);
        char fraction[8];
        std::snprintf(fraction, sizeof fraction, ".%03dZ", static_cast<int>(millis));
        return std::string(text, n) + fraction;
    }
};

std::unique_ptr<spdlog::formatter> make_formatter() {
    if (g_json.load()) return std::make_unique<JsonFormatter>();
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<ThreadFieldsFlag>('&').set_pattern(std::string(kHumanPattern));
    return formatter;
}

std::mutex& logger_mutex() {
    static std::mutex mutex;
    return mutex;
}

}  // namespace

std::shared_ptr<spdlog::logger> component_logger(const std::string& component) {
    std::lock_guard lock(logger_mutex());
    if (auto existing = spdlog::get(component)) return existing;
    auto logger = spdlog::stderr_color_mt(component);
    logger->set_formatter(make_formatter());
    return logger;
}

bool set_log_level(const std::string& level) {
    const auto parsed = spdlog::level::from_str(level);
    if (parsed == spdlog::level::off && level != "off") return false;
    spdlog::set_level(parsed);
    return true;
}

bool set_log_format(const std::string& format) {
    if (format != "human" && format != "json") return false;
    std::lock_guard lock(logger_mutex());
    g_json.store(format == "json");
    spdlog::apply_all([](const std::shared_ptr<spdlog::logger>& logger) {
        logger->set_formatter(make_formatter());
    });
    return true;
}

LogFields::LogFields() : begin_(t_fields.size()) { ++t_scopes; }

LogFields::~LogFields() {
    if (t_fields.size() > begin_) t_fields.resize(begin_);
    --t_scopes;
}

void LogFields::set(std::string_view key, std::string value) {
    for (std::size_t i = begin_; i < t_fields.size(); ++i) {
        if (t_fields[i].first == key) {
            t_fields[i].second = std::move(value);
            return;
        }
    }
    t_fields.emplace_back(std::string(key), std::move(value));
}

void set_log_field(std::string_view key, std::string value) {
    if (t_scopes == 0) return;
    for (auto it = t_fields.rbegin(); it != t_fields.rend(); ++it) {
        if (it->first == key) {
            it->second = std::move(value);
            return;
        }
    }
    t_fields.emplace_back(std::string(key), std::move(value));
}

std::vector<std::pair<std::string, std::string>> log_fields() { return t_fields; }

std::vector<std::pair<std::string, std::string>> message_fields(std::string_view message) {
    Fields fields;
    std::size_t i = 0;
    const std::size_t n = message.size();
    while (i < n) {
        while (i < n && message[i] == ' ') ++i;
        const std::size_t word = i;
        if (i < n && is_key_start(message[i])) {
            std::size_t k = i + 1;
            while (k < n && is_key_char(message[k])) ++k;
            if (k < n && message[k] == '=') {
                std::string key(message.substr(i, k - i));
                std::size_t v = k + 1;
                if (v < n && message[v] == '"') {
                    // To the next quote that ends the word; an unclosed one runs to the end.
                    std::size_t close = v + 1;
                    while (close < n && !(message[close] == '"' &&
                                          (close + 1 == n || message[close + 1] == ' '))) {
                        ++close;
                    }
                    fields.emplace_back(std::move(key), std::string(message.substr(
                                                            v + 1, std::min(close, n) - v - 1)));
                    i = close < n ? close + 1 : n;
                } else {
                    std::size_t end = v;
                    while (end < n && message[end] != ' ') ++end;
                    fields.emplace_back(std::move(key), std::string(message.substr(v, end - v)));
                    i = end;
                }
                continue;
            }
        }
        // Not a field: skip the word.
        i = word;
        while (i < n && message[i] != ' ') ++i;
    }
    return fields;
}

}  // namespace glassbox::base
