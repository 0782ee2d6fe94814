// ServiceSettings readers and the API key from the environment.
#include "workers/runtime/service_config.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include <nlohmann/json.hpp>

namespace glassbox::runtime {

base::Error invalid_setting(std::string message) {
    return base::make_error(base::ErrorType::kInvalidRequest, std::move(message));
}

base::Result<ServiceSettings> ServiceSettings::of(const nlohmann::json& object,
                                                  std::string_view service) {
    if (!object.is_object()) {
        return invalid_setting("the " + std::string(service) + " settings must be a JSON object");
    }
    return ServiceSettings(object, service);
}

std::string ServiceSettings::setting(const std::string& key) const {
    return service_ + " setting \"" + key + "\"";
}

base::Result<std::uint64_t> ServiceSettings::integer(const std::string& key, std::uint64_t min,
                                                     std::uint64_t max) const {
    const nlohmann::json& v = object_->at(key);
    // A negative value is below every range a setting has.
    const bool in_range = v.is_number_integer() &&
                          (v.is_number_unsigned() || v.get<std::int64_t>() >= 0) &&
                          v.get<std::uint64_t>() >= min && v.get<std::uint64_t>() <= max;
    if (!in_range) {
        return invalid_setting(setting(key) + " must be an integer from " + std::to_string(min) +
                               " to " + std::to_string(max));
    }
    return v.get<std::uint64_t>();
}

base::Result<std::string> ServiceSettings::text(const std::string& key) const {
    const nlohmann::json& v = object_->at(key);
    if (!v.is_string()) return invalid_setting(setting(key) + " must be a string");
    return v.get<std::string>();
}

base::Result<std::string> ServiceSettings::url(const std::string& key) const {
    auto v = text(key);
    if (v && !v->starts_with("http://") && !v->starts_with("https://")) {
        return invalid_setting(setting(key) + " must start with http:// or https://");
    }
    return v;
}

base::Error ServiceSettings::unknown(const std::string& key, std::string_view known) const {
    return invalid_setting("unknown " + setting(key) + " (known: " + std::string(known) + ")");
}

base::Result<void> read_settings(const nlohmann::json& object, std::string_view service,
                                 const std::vector<SettingReader>& readers) {
    auto settings = ServiceSettings::of(object, service);
    if (!settings) return std::move(settings).error();
    for (const auto& item : object.items()) {
        const std::string& key = item.key();
        const auto reader = std::find_if(readers.begin(), readers.end(),
                                         [&](const SettingReader& r) { return r.key == key; });
        if (reader == readers.end()) {
            std::string known;
            for (const auto& r : readers) known += (known.empty() ? "" : ", ") + std::string(r.key);
            return settings->unknown(key, known);
        }
        if (auto read = reader->read(*settings, key); !read) return read;
    }
    return {};
}

SettingReader text_setting(std::string_view key, std::string& out) {
    return {key,
            [&out](const ServiceSettings& settings, const std::string& name) -> base::Result<void> {
                auto v = settings.text(name);
                if (!v) return std::move(v).error();
                out = std::move(*v);
                return {};
            }};
}

SettingReader url_setting(std::string_view key, std::string& out) {
    return {key,
            [&out](const ServiceSettings& settings, const std::string& name) -> base::Result<void> {
                auto v = settings.url(name);
                if (!v) return std::move(v).error();
                out = std::move(*v);
                return {};
            }};
}

SettingReader millis_setting(std::string_view key, std::uint64_t min, std::uint64_t max,
                             std::chrono::milliseconds& out) {
    return {key,
            [min, max, &out](const ServiceSettings& settings,
                             const std::string& name) -> base::Result<void> {
                auto v = settings.integer(name, min, max);
                if (!v) return std::move(v).error();
                out = std::chrono::milliseconds{static_cast<std::int64_t>(*v)};
                return {};
            }};
}

base::Result<std::string> api_key_from_env(std::string_view service, const std::string& env) {
    if (env.empty()) return std::string();
    const char* key = std::getenv(env.c_str());
    if (key == nullptr || *key == '\0') {
        return invalid_setting("the environment variable " + env + " (" + std::string(service) +
                               " setting \"api_key_env\") is not set; set it to the API key, or "
                               "set \"api_key_env\" to \"\" for a server that needs none");
    }
    return std::string(key);
}

}  // namespace glassbox::runtime
