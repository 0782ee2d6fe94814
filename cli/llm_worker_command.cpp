// `glassbox worker llm`: the llm service with the built-in extractive provider or an
// OpenAI-compatible chat-completions endpoint, and its prompt templates.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/client_options.hpp"
#include "cli/worker_support.hpp"
#include "cli/home.hpp"
#include "base/log.hpp"
#include "schema/messages.hpp"
#include "schema/services.hpp"
#include "workers/llm/extractive_model.hpp"
#include "workers/llm/llm_config.hpp"
#include "workers/llm/llm_service.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;

struct LlmOptions {
    WorkerOptions worker;
    std::string config_file;  // a JSON object of LlmConfig keys
    std::string provider;
    std::string base_url;
    std::string model;
    std::string api_key_env;
    std::string templates;
    int timeout_ms = 0;
    int connect_timeout_ms = 0;
    int max_retries = -1;
    std::string embeddings_service{schema::services::kEmbeddings};
};

// The config file's object, then every flag (or its environment variable) on top of it.
nlohmann::json llm_config_object(const LlmOptions& options) {
    nlohmann::json config = nlohmann::json::object();
    if (!options.config_file.empty()) {
        std::ifstream in(options.config_file);
        if (!in) exit_with_error(make_error(ErrorType::kNotFound, "cannot read config file " + options.config_file));
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        auto parsed = schema::parse_json(text);
        if (!parsed || !parsed->is_object()) {
            exit_with_error(make_error(ErrorType::kInvalidJson,
                                       options.config_file + ": expected a JSON object of llm settings"));
        }
        config = std::move(parsed).value();
    }
    if (!options.provider.empty()) config["provider"] = options.provider;
    if (!options.base_url.empty()) config["base_url"] = options.base_url;
    if (!options.model.empty()) config["model"] = options.model;
    if (!options.api_key_env.empty()) config["api_key_env"] = options.api_key_env == "-" ? "" : options.api_key_env;
    if (!options.templates.empty()) config["templates"] = options.templates;
    if (options.timeout_ms != 0) config["timeout_ms"] = options.timeout_ms;
    if (options.connect_timeout_ms != 0) config["connect_timeout_ms"] = options.connect_timeout_ms;
    if (options.max_retries >= 0) config["max_retries"] = options.max_retries;
    return config;
}

void run_llm(const LlmOptions& options) {
    const sigset_t stop_signals = block_stop_signals();
    auto config = llm::LlmConfig::from_json(llm_config_object(options));
    if (!config) exit_with_error(config.error());

    // Templates: the configured folder (which must exist), else <home>/templates if it exists.
    std::filesystem::path folder = config->templates;
    if (folder.empty()) {
        const auto home_templates = cli::resolve_home(options.worker.bus.home) / "templates";
        std::error_code ec;
        if (std::filesystem::is_directory(home_templates, ec)) folder = home_templates;
    }
    auto templates = folder.empty() ? llm::TemplateSet::builtin() : llm::TemplateSet::load(folder);
    if (!templates) exit_with_error(templates.error());
    auto provider = llm::make_provider(*config);
    if (!provider) exit_with_error(provider.error());
    base::component_logger("llm")->info(
        "event=llm_start provider={} model={} templates={}", llm::to_string(config->effective_provider()),
        config->effective_provider() == llm::ProviderKind::kOpenAi ? config->model
                                                                   : std::string(llm::ExtractiveModel::kModelName),
        folder.empty() ? std::string("built-in") : folder.string());
    llm::LlmServiceOptions service;
    service.embeddings_service = options.embeddings_service == "-" ? "" : options.embeddings_service;
    run_worker(std::string(schema::services::kLlm), options.worker,
               llm::make_llm_handler(std::make_shared<const llm::TemplateSet>(std::move(templates).value()),
                                     std::move(provider).value(), service),
               stop_signals);
}

}  // namespace

void add_llm_worker_command(CLI::App& worker_command) {
    auto options = std::make_shared<LlmOptions>();
    options->worker.threads = 2;
    auto* sub = worker_command.add_subcommand(
        "llm", "Serve `llm`: prompt templates answered by the built-in extractive provider or an "
               "OpenAI-compatible endpoint (docs/llm.md)");
    add_worker_options(*sub, options->worker, std::string(schema::services::kLlm));
    sub->add_option("--config", options->config_file,
                    "JSON file of llm settings (keys as in docs/llm.md); flags override it")
        ->envname("GLASSBOX_LLM_CONFIG");
    sub->add_option("--provider", options->provider,
                    "extractive or openai (default: openai when a model is set, else extractive)")
        ->check(CLI::IsMember({"extractive", "openai"}))
        ->envname("GLASSBOX_LLM_PROVIDER");
    sub->add_option("--base-url", options->base_url,
                    "openai: the API's base URL (…/v1/chat/completions is appended)")
        ->envname("GLASSBOX_LLM_BASE_URL");
    sub->add_option("--model", options->model, "openai: the model name")->envname("GLASSBOX_LLM_MODEL");
    sub->add_option("--api-key-env", options->api_key_env,
                    "openai: environment variable holding the API key (default OPENAI_API_KEY; '-' for none)");
    sub->add_option("--templates", options->templates,
                    "Folder of <name>.txt prompt templates overriding the built-in ones "
                    "(default: <home>/templates when it exists)");
    sub->add_option("--timeout-ms", options->timeout_ms, "openai: one completion, retries included")
        ->check(CLI::Range(1, 3'600'000));
    sub->add_option("--connect-timeout-ms", options->connect_timeout_ms, "openai: one TCP/TLS connect")
        ->check(CLI::Range(1, 600'000));
    sub->add_option("--max-retries", options->max_retries, "openai: retries on 408/429/5xx/connection failures")
        ->check(CLI::Range(0, 10));
    sub->add_option("--embeddings-service", options->embeddings_service,
                    "Service asked for vectors when scoring edges ('-' for none: lexical only)")
        ->capture_default_str();
    sub->callback([options] { run_llm(*options); });
}

}  // namespace glassbox::cli
