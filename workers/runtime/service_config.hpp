// Reading a service's JSON settings: typed values whose errors name the setting, and the API key
// an HTTP provider takes from the environment.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace glassbox::runtime {

// kInvalidRequest with `message`: how every bad setting is reported.
base::Error invalid_setting(std::string message);

// The settings object of one service ("llm", "embeddings"). Each reader takes a key the object
// has; a bad value is kInvalidRequest saying what `<service> setting "<key>"` must be.
class ServiceSettings {
public:
    // kInvalidRequest unless `object` is a JSON object. `object` must outlive the reader.
    static base::Result<ServiceSettings> of(const nlohmann::json& object, std::string_view service);

    // An integer from `min` to `max`.
    base::Result<std::uint64_t> integer(const std::string& key, std::uint64_t min,
                                        std::uint64_t max) const;
    base::Result<std::string> text(const std::string& key) const;
    // A text starting with http:// or https://.
    base::Result<std::string> url(const std::string& key) const;
    // A key the service does not know (a typo, most likely); `known` lists those it does.
    base::Error unknown(const std::string& key, std::string_view known) const;

private:
    ServiceSettings(const nlohmann::json& object, std::string_view service)
        : object_(&object), service_(service) {}

    std::string setting(const std::string& key) const;

    const nlohmann::json* object_;
    std::string service_;
};

// One setting a service knows: its key, and how its value goes into the service's config (the
// reader checks it; a bad value is the reader's kInvalidRequest).
struct SettingReader {
    std::string_view key;
    std::function<base::Result<void>(const ServiceSettings& settings, const std::string& key)> read;
};

// Every key of `object` read by the reader of that key, in the object's order; a key no reader
// has is ServiceSettings::unknown, listing the readers' keys in their order. The one way the
// services (llm, embeddings) read their settings.
base::Result<void> read_settings(const nlohmann::json& object, std::string_view service,
                                 const std::vector<SettingReader>& readers);

// Readers of the usual kinds, writing into a config's member (which must outlive the read).
SettingReader text_setting(std::string_view key, std::string& out);
SettingReader url_setting(std::string_view key, std::string& out);
SettingReader millis_setting(std::string_view key, std::uint64_t min, std::uint64_t max,
                             std::chrono::milliseconds& out);
template <typename T>
SettingReader integer_setting(std::string_view key, std::uint64_t min, std::uint64_t max, T& out) {
    return {key,
            [min, max, &out](const ServiceSettings& settings,
                             const std::string& name) -> base::Result<void> {
                auto v = settings.integer(name, min, max);
                if (!v) return std::move(v).error();
                out = static_cast<T>(*v);
                return {};
            }};
}

// The API key in the environment variable `env` ("" when `env` is "": a server that needs no
// key); kInvalidRequest naming `<service> setting "api_key_env"` when it is unset or empty.
// Read once at start-up: getenv is not safe against a concurrent setenv later.
base::Result<std::string> api_key_from_env(std::string_view service, const std::string& env);

}  // namespace glassbox::runtime
