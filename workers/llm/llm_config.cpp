// LlmConfig from JSON (every value checked) and the provider it describes.
#include "workers/llm/llm_config.hpp"

#include "schema/services.hpp"
#include "workers/llm/extractive_provider.hpp"
#include "workers/llm/openai_provider.hpp"
#include "workers/runtime/service_config.hpp"

namespace glassbox::llm {

using nlohmann::json;
using runtime::invalid_setting;

namespace {

constexpr std::string_view kService = schema::services::kLlm;
constexpr std::string_view kKnownKeys =
    "provider, base_url, model, api_key_env, connect_timeout_ms, timeout_ms, max_retries, "
    "temperature, templates, extractive_delay_ms";

}  // namespace

std::string_view to_string(ProviderKind kind) noexcept {
    return kind == ProviderKind::kOpenAi ? "openai" : "extractive";
}

base::Result<LlmConfig> LlmConfig::from_json(const json& object) {
    auto settings = runtime::ServiceSettings::of(object, kService);
    if (!settings) return std::move(settings).error();
    LlmConfig config;
    for (const auto& [key, value] : object.items()) {
        if (key == "provider") {
            auto name = settings->text(key);
            if (!name) return std::move(name).error();
            if (*name == "extractive") {
                config.provider = ProviderKind::kExtractive;
            } else if (*name == "openai") {
                config.provider = ProviderKind::kOpenAi;
            } else {
                return invalid_setting(
                    "llm setting \"provider\" must be \"extractive\" or \"openai\", not \"" +
                    *name + "\"");
            }
        } else if (key == "base_url") {
            auto v = settings->url(key);
            if (!v) return std::move(v).error();
            config.base_url = std::move(*v);
        } else if (key == "model") {
            auto v = settings->text(key);
            if (!v) return std::move(v).error();
            config.model = std::move(*v);
        } else if (key == "api_key_env") {
            auto v = settings->text(key);
            if (!v) return std::move(v).error();
            config.api_key_env = std::move(*v);
        } else if (key == "connect_timeout_ms") {
            auto v = settings->integer(key, 1, 600'000);
            if (!v) return std::move(v).error();
            config.connect_timeout = std::chrono::milliseconds{static_cast<std::int64_t>(*v)};
        } else if (key == "timeout_ms") {
            auto v = settings->integer(key, 1, 3'600'000);
            if (!v) return std::move(v).error();
            config.timeout = std::chrono::milliseconds{static_cast<std::int64_t>(*v)};
        } else if (key == "max_retries") {
            auto v = settings->integer(key, 0, 10);
            if (!v) return std::move(v).error();
            config.max_retries = static_cast<int>(*v);
        } else if (key == "temperature") {
            if (!value.is_number() || value.get<double>() < 0.0 || value.get<double>() > 2.0)
                return invalid_setting("llm setting \"temperature\" must be a number from 0 to 2");
            config.temperature = value.get<double>();
        } else if (key == "extractive_delay_ms") {
            auto v = settings->integer(key, 0, 600'000);
            if (!v) return std::move(v).error();
            config.extractive_delay = std::chrono::milliseconds{static_cast<std::int64_t>(*v)};
        } else if (key == "templates") {
            auto v = settings->text(key);
            if (!v) return std::move(v).error();
            config.templates = std::move(*v);
        } else {
            return settings->unknown(key, kKnownKeys);
        }
    }
    if (config.effective_provider() == ProviderKind::kOpenAi && config.model.empty())
        return invalid_setting("the openai provider needs llm setting \"model\" (or --model)");
    return config;
}

base::Result<std::shared_ptr<Provider>> make_provider(const LlmConfig& config) {
    if (config.effective_provider() == ProviderKind::kExtractive)
        return std::shared_ptr<Provider>(std::make_shared<ExtractiveProvider>(config.extractive_delay));
    if (config.model.empty())
        return invalid_setting("the openai provider needs llm setting \"model\" (or --model)");
    OpenAiProviderOptions options;
    options.base_url = config.base_url;
    options.model = config.model;
    options.temperature = config.temperature;
    options.http.connect_timeout = config.connect_timeout;
    options.http.timeout = config.timeout;
    options.http.max_retries = config.max_retries;
    auto api_key = runtime::api_key_from_env(kService, config.api_key_env);
    if (!api_key) return std::move(api_key).error();
    options.api_key = std::move(*api_key);
    return std::shared_ptr<Provider>(std::make_shared<OpenAiProvider>(std::move(options)));
}

}  // namespace glassbox::llm
