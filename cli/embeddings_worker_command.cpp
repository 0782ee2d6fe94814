// `glassbox worker embeddings`: the embeddings service with the built-in hashing embedder or an
// OpenAI-compatible endpoint.
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/client_options.hpp"
#include "cli/worker_support.hpp"
#include "schema/messages.hpp"
#include "schema/services.hpp"
#include "workers/embeddings/embeddings_config.hpp"
#include "workers/embeddings/embeddings_service.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;

struct EmbeddingsOptions {
    WorkerOptions worker;
    std::string config_file;  // a JSON object of EmbeddingsConfig keys
    std::string provider;
    std::uint32_t dim = 0;
    std::string base_url;
    std::string model;
    std::string api_key_env;
    std::size_t batch_size = 0;
    int timeout_ms = 0;
    int max_retries = -1;
};

// The config file's object, then every flag given on the command line on top of it.
nlohmann::json config_object(const EmbeddingsOptions& options) {
    nlohmann::json config = nlohmann::json::object();
    if (!options.config_file.empty()) {
        std::ifstream in(options.config_file);
        if (!in) {
            exit_with_error(make_error(ErrorType::kNotFound, "cannot read config file " + options.config_file));
        }
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        auto parsed = schema::parse_json(text);
        if (!parsed || !parsed->is_object()) {
            exit_with_error(make_error(ErrorType::kInvalidJson,
                                       options.config_file + ": expected a JSON object of embeddings settings"));
        }
        config = std::move(parsed).value();
    }
    if (!options.provider.empty()) config["provider"] = options.provider;
    if (options.dim != 0) config["dim"] = options.dim;
    if (!options.base_url.empty()) config["base_url"] = options.base_url;
    if (!options.model.empty()) config["model"] = options.model;
    if (!options.api_key_env.empty()) config["api_key_env"] = options.api_key_env == "-" ? "" : options.api_key_env;
    if (options.batch_size != 0) config["batch_size"] = options.batch_size;
    if (options.timeout_ms != 0) config["timeout_ms"] = options.timeout_ms;
    if (options.max_retries >= 0) config["max_retries"] = options.max_retries;
    return config;
}

void run_embeddings(const EmbeddingsOptions& options) {
    const sigset_t stop_signals = block_stop_signals();
    auto config = embeddings::EmbeddingsConfig::from_json(config_object(options));
    if (!config) exit_with_error(config.error());
    auto embedder = embeddings::make_embedder(*config);
    if (!embedder) exit_with_error(embedder.error());
    run_worker(std::string(schema::services::kEmbeddings), options.worker,
               embeddings::make_embeddings_handler(std::move(embedder).value(), config->limits), stop_signals);
}

}  // namespace

void add_embeddings_worker_command(CLI::App& worker_command) {
    auto options = std::make_shared<EmbeddingsOptions>();
    options->worker.threads = 2;
    auto* sub = worker_command.add_subcommand(
        "embeddings", "Serve `embeddings`: texts to vectors (built-in feature hashing, or an OpenAI-compatible API)");
    add_worker_options(*sub, options->worker, std::string(schema::services::kEmbeddings));
    sub->add_option("--config", options->config_file,
                    "JSON file of embeddings settings (keys as in docs/operations.md); flags override it")
        ->envname("GLASSBOX_EMBEDDINGS_CONFIG");
    sub->add_option("--provider", options->provider, "hashing (default) or openai")
        ->check(CLI::IsMember({"hashing", "openai"}))
        ->envname("GLASSBOX_EMBEDDINGS_PROVIDER");
    sub->add_option("--dim", options->dim, "Vector size (hashing default 384)")->check(CLI::Range(1, 65536));
    sub->add_option("--base-url", options->base_url, "openai: the API's base URL (…/v1/embeddings is appended)")
        ->envname("GLASSBOX_EMBEDDINGS_BASE_URL");
    sub->add_option("--model", options->model, "openai: the model name")->envname("GLASSBOX_EMBEDDINGS_MODEL");
    sub->add_option("--api-key-env", options->api_key_env,
                    "openai: environment variable holding the API key ('-' for none)");
    sub->add_option("--batch-size", options->batch_size, "openai: texts per HTTP request")
        ->check(CLI::Range(1, 2048));
    sub->add_option("--timeout-ms", options->timeout_ms, "openai: per HTTP request, retries included")
        ->check(CLI::Range(1, 600'000));
    sub->add_option("--max-retries", options->max_retries, "openai: retries on 429/5xx/connection failures")
        ->check(CLI::Range(0, 10));
    sub->callback([options] { run_embeddings(*options); });
}

}  // namespace glassbox::cli
