// LlmConfig from JSON (every value checked) and the provider it describes.
#include "workers/llm/llm_config.hpp"

#include "schema/services.hpp"
#include "workers/llm/extractive_provider.hpp"
#include "workers/llm/openai_provider.hpp"
#include "workers/runtime/json_config.hpp"
#include "workers/runtime/service_config.hpp"

namespace glassbox::llm {

using nlohmann::json;
using runtime::invalid_setting;

namespace {

constexpr std::string_view kService = schema::services::kLlm;

}  // namespace

std::string_view to_string(ProviderKind kind) noexcept {
    return kind == ProviderKind::kOpenAi ? "openai" : "extractive";
}

base::Result<LlmConfig> LlmConfig::from_json(const json& object) {
    LlmConfig config;
    const runtime::SettingReader provider = runtime::choice_setting<ProviderKind>(
        kService, "provider",
        {{"extractive", ProviderKind::kExtractive}, {"openai", ProviderKind::kOpenAi}},
        config.provider);
    const runtime::SettingReader temperature{
        "temperature",
        [&config, &object](const runtime::ServiceSettings&,
                           const std::string& key) -> base::Result<void> {
            const json& value = object.at(key);
            if (!value.is_number() || value.get<double>() < 0.0 || value.get<double>() > 2.0)
                return invalid_setting("llm setting \"temperature\" must be a number from 0 to 2");
            config.temperature = value.get<double>();
            return {};
        }};
    auto read = runtime::read_settings(
        object, kService,
        {provider, runtime::url_setting("base_url", config.base_url),
         runtime::text_setting("model", config.model),
         runtime::text_setting("api_key_env", config.api_key_env),
         runtime::millis_setting("connect_timeout_ms", 1, 600'000, config.connect_timeout),
         runtime::millis_setting("timeout_ms", 1, 3'600'000, config.timeout),
         runtime::integer_setting("max_retries", 0, 10, config.max_retries), temperature,
         runtime::text_setting("templates", config.templates),
         runtime::millis_setting("extractive_delay_ms", 0, 600'000, config.extractive_delay)});
    if (!read) return std::move(read).error();
    if (config.effective_provider() == ProviderKind::kOpenAi && config.model.empty())
        return invalid_setting("the openai provider needs llm setting \"model\" (or --model)");
    return config;
}

base::Result<std::shared_ptr<Provider>> make_provider(const LlmConfig& config) {
    if (config.effective_provider() == ProviderKind::kExtractive)
        return std::shared_ptr<Provider>(
            std::make_shared<ExtractiveProvider>(config.extractive_delay));
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
