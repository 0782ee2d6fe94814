// LlmConfig from JSON (every value checked) and the provider it describes.
#include "workers/llm/llm_config.hpp"

#include <cstdlib>

#include "workers/llm/extractive_provider.hpp"
#include "workers/llm/openai_provider.hpp"

namespace glassbox::llm {

using nlohmann::json;
using schema::Error;
using schema::ErrorType;
using schema::make_error;

namespace {

constexpr std::string_view kKnownKeys =
    "provider, base_url, model, api_key_env, connect_timeout_ms, timeout_ms, max_retries, "
    "temperature, templates";

Error invalid(std::string message) {
    return make_error(ErrorType::kInvalidRequest, std::move(message));
}

}  // namespace

std::string_view to_string(ProviderKind kind) noexcept {
    return kind == ProviderKind::kOpenAi ? "openai" : "extractive";
}

schema::Result<LlmConfig> LlmConfig::from_json(const json& object) {
    if (!object.is_object()) return invalid("the llm settings must be a JSON object");
    LlmConfig config;
    const auto integer = [&](const std::string& key, std::int64_t min,
                             std::int64_t max) -> schema::Result<std::int64_t> {
        const json& v = object.at(key);
        if (v.is_number_integer()) {
            const bool negative =
                v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() < 0;
            const std::int64_t n = negative ? v.get<std::int64_t>()
                                            : static_cast<std::int64_t>(std::min<std::uint64_t>(
                                                  v.get<std::uint64_t>(), INT64_MAX));
            if (n >= min && n <= max) return n;
        }
        return invalid("llm setting \"" + key + "\" must be an integer from " +
                       std::to_string(min) + " to " + std::to_string(max));
    };
    const auto text = [&](const std::string& key) -> schema::Result<std::string> {
        const json& v = object.at(key);
        if (!v.is_string()) return invalid("llm setting \"" + key + "\" must be a string");
        return v.get<std::string>();
    };
    for (const auto& [key, value] : object.items()) {
        if (key == "provider") {
            auto name = text(key);
            if (!name) return std::move(name).error();
            if (*name == "extractive") {
                config.provider = ProviderKind::kExtractive;
            } else if (*name == "openai") {
                config.provider = ProviderKind::kOpenAi;
            } else {
                return invalid(
                    "llm setting \"provider\" must be \"extractive\" or \"openai\", not \"" +
                    *name + "\"");
            }
        } else if (key == "base_url") {
            auto v = text(key);
            if (!v) return std::move(v).error();
            if (!v->starts_with("http://") && !v->starts_with("https://"))
                return invalid("llm setting \"base_url\" must start with http:// or https://");
            config.base_url = std::move(*v);
        } else if (key == "model") {
            auto v = text(key);
            if (!v) return std::move(v).error();
            config.model = std::move(*v);
        } else if (key == "api_key_env") {
            auto v = text(key);
            if (!v) return std::move(v).error();
            config.api_key_env = std::move(*v);
        } else if (key == "connect_timeout_ms") {
            auto v = integer(key, 1, 600'000);
            if (!v) return std::move(v).error();
            config.connect_timeout = std::chrono::milliseconds{*v};
        } else if (key == "timeout_ms") {
            auto v = integer(key, 1, 3'600'000);
            if (!v) return std::move(v).error();
            config.timeout = std::chrono::milliseconds{*v};
        } else if (key == "max_retries") {
            auto v = integer(key, 0, 10);
            if (!v) return std::move(v).error();
            config.max_retries = static_cast<int>(*v);
        } else if (key == "temperature") {
            if (!value.is_number() || value.get<double>() < 0.0 || value.get<double>() > 2.0)
                return invalid("llm setting \"temperature\" must be a number from 0 to 2");
            config.temperature = value.get<double>();
        } else if (key == "templates") {
            auto v = text(key);
            if (!v) return std::move(v).error();
            config.templates = std::move(*v);
        } else {
            return invalid("unknown llm setting \"" + key +
                           "\" (known: " + std::string(kKnownKeys) + ")");
        }
    }
    if (config.effective_provider() == ProviderKind::kOpenAi && config.model.empty())
        return invalid("the openai provider needs llm setting \"model\" (or --model)");
    return config;
}

schema::Result<std::shared_ptr<Provider>> make_provider(const LlmConfig& config) {
    if (config.effective_provider() == ProviderKind::kExtractive)
        return std::shared_ptr<Provider>(std::make_shared<ExtractiveProvider>());
    if (config.model.empty())
        return invalid("the openai provider needs llm setting \"model\" (or --model)");
    OpenAiProviderOptions options;
    options.base_url = config.base_url;
    options.model = config.model;
    options.temperature = config.temperature;
    options.http.connect_timeout = config.connect_timeout;
    options.http.timeout = config.timeout;
    options.http.max_retries = config.max_retries;
    if (!config.api_key_env.empty()) {
        // Read once at start-up: getenv is not safe against a concurrent setenv later.
        const char* key = std::getenv(config.api_key_env.c_str());
        if (key == nullptr || *key == '\0') {
            return invalid(
                "the environment variable " + config.api_key_env +
                " (llm setting \"api_key_env\") is not set; set it to the API key, or set "
                "\"api_key_env\" to \"\" for a server that needs none");
        }
        options.api_key = key;
    }
    return std::shared_ptr<Provider>(std::make_shared<OpenAiProvider>(std::move(options)));
}

}  // namespace glassbox::llm
