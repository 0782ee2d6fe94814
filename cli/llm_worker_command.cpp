// `glassbox worker llm`: the llm service with the built-in extractive provider or an
// OpenAI-compatible chat-completions endpoint, and its prompt templates.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/log.hpp"
#include "cli/client_options.hpp"
#include "cli/home.hpp"
#include "cli/settings.hpp"
#include "cli/worker_support.hpp"
#include "reasoner/reasoner.hpp"
#include "schema/messages.hpp"
#include "schema/services.hpp"
#include "workers/llm/llm_config.hpp"
#include "workers/llm/llm_request.hpp"
#include "workers/llm/llm_service.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;

struct LlmOptions {
    WorkerOptions worker;
    std::string embeddings_service{schema::services::kEmbeddings};
};

void run_llm(const LlmOptions& options) {
    const sigset_t stop_signals = block_stop_signals();
    auto config = llm::LlmConfig::from_json(service_settings_json("llm"));
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
    base::component_logger("llm")->info("event=llm_start provider={} model={} templates={}",
                                        llm::to_string(config->effective_provider()),
                                        config->effective_provider() == llm::ProviderKind::kOpenAi
                                            ? config->model
                                            : std::string(reasoner::ExtractiveModel::kModelName),
                                        folder.empty() ? std::string("built-in") : folder.string());
    llm::LlmServiceOptions service;
    service.embeddings_service =
        options.embeddings_service == "-" ? "" : options.embeddings_service;
    // The extractive provider answers in milliseconds: on the slots' I/O threads (its one call,
    // to embeddings for kg-edge-scoring, waits at most service.embeddings_timeout and is
    // skipped while the built-in model's vectors are computed here). An HTTP model, or an
    // extractive answer held back by extractive_delay_ms: on the handler threads.
    const bool local = config->effective_provider() == llm::ProviderKind::kExtractive &&
                       config->extractive_delay.count() == 0;
    run_worker(std::string(schema::services::kLlm), options.worker,
               llm::make_llm_handler(
                   std::make_shared<const llm::TemplateSet>(std::move(templates).value()),
                   std::move(provider).value(), service),
               stop_signals, llm::reads_body_as_text, local ? inline_when_small() : InlineHook{});
}

}  // namespace

void add_llm_worker_command(CLI::App& worker_command) {
    auto [sub, options] = add_worker_subcommand<LlmOptions>(
        worker_command, schema::services::kLlm,
        "Serve `llm`: prompt templates answered by the built-in extractive provider or an "
        "OpenAI-compatible endpoint (docs/llm.md)",
        run_llm);
    // The [llm] settings (docs/configuration.md); flags override the file and the environment.
    add_section_options(
        *sub, "llm",
        {"--config", "--provider", "--base-url", "--model", "--api-key-env", "--templates",
         "--timeout-ms", "--connect-timeout-ms", "--max-retries", "--extractive-delay-ms"});
    sub->add_option("--embeddings-service", options->embeddings_service,
                    "Service asked for vectors when scoring edges ('-' for none: lexical only)")
        ->capture_default_str();
}

}  // namespace glassbox::cli
