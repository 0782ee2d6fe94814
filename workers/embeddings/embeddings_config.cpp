// EmbeddingsConfig from JSON (every value checked) and the embedder it describes.
#include "workers/embeddings/embeddings_config.hpp"

#include "schema/services.hpp"
#include "workers/embeddings/feature_hashing_embedder.hpp"
#include "workers/embeddings/openai_embedder.hpp"
#include "workers/runtime/json_config.hpp"
#include "workers/runtime/service_config.hpp"

namespace glassbox::embeddings {

using nlohmann::json;
using runtime::invalid_setting;

namespace {

constexpr std::string_view kService = schema::services::kEmbeddings;

}  // namespace

std::string_view to_string(Provider provider) noexcept {
    switch (provider) {
        case Provider::kHashing:
            return "hashing";
        case Provider::kOpenAi:
            return "openai";
    }
    return "hashing";
}

base::Result<EmbeddingsConfig> EmbeddingsConfig::from_json(const json& object) {
    EmbeddingsConfig config;
    const runtime::SettingReader provider = runtime::choice_setting<Provider>(
        kService, "provider", {{"hashing", Provider::kHashing}, {"openai", Provider::kOpenAi}},
        config.provider);
    const runtime::SettingReader model{
        "model",
        [&config](const runtime::ServiceSettings& settings,
                  const std::string& key) -> base::Result<void> {
            auto v = settings.text(key);
            if (!v) return std::move(v).error();
            if (v->empty())
                return invalid_setting("embeddings setting \"model\" must not be empty");
            config.model = std::move(*v);
            return {};
        }};
    auto read = runtime::read_settings(
        object, kService,
        {provider, runtime::integer_setting("dim", 0, 65'536, config.dim),
         runtime::url_setting("base_url", config.base_url), model,
         runtime::text_setting("api_key_env", config.api_key_env),
         runtime::integer_setting("batch_size", 1, 2'048, config.batch_size),
         runtime::millis_setting("timeout_ms", 1, 600'000, config.timeout),
         runtime::integer_setting("max_retries", 0, 10, config.max_retries),
         runtime::integer_setting("max_texts", 1, 100'000, config.limits.max_texts),
         runtime::integer_setting("max_text_bytes", 1, 16'777'216, config.limits.max_text_bytes)});
    if (!read) return std::move(read).error();
    if (config.provider == Provider::kHashing && object.contains("dim") && config.dim == 0) {
        return invalid_setting(
            "embeddings setting \"dim\" must be from 1 to 65536 for the hashing provider");
    }
    return config;
}

base::Result<std::shared_ptr<Embedder>> make_embedder(const EmbeddingsConfig& config) {
    if (config.provider == Provider::kHashing) {
        const std::uint32_t dim = config.dim != 0 ? config.dim : kDefaultHashingDim;
        return std::shared_ptr<Embedder>(std::make_shared<FeatureHashingEmbedder>(dim));
    }
    if (config.batch_size == 0)
        return invalid_setting("embeddings setting \"batch_size\" must be at least 1");
    OpenAiEmbedderOptions options;
    options.base_url = config.base_url;
    options.model = config.model;
    options.dim = config.dim;
    options.batch_size = config.batch_size;
    options.http.timeout = config.timeout;
    options.http.max_retries = config.max_retries;
    auto api_key = runtime::api_key_from_env(kService, config.api_key_env);
    if (!api_key) return std::move(api_key).error();
    options.api_key = std::move(*api_key);
    return std::shared_ptr<Embedder>(std::make_shared<OpenAiEmbedder>(std::move(options)));
}

}  // namespace glassbox::embeddings
