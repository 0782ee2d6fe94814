// `glassbox worker embeddings`: the embeddings service with the built-in hashing embedder or an
// OpenAI-compatible endpoint.
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/client_options.hpp"
#include "cli/settings.hpp"
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
};

void run_embeddings(const EmbeddingsOptions& options) {
    const sigset_t stop_signals = block_stop_signals();
    auto config = embeddings::EmbeddingsConfig::from_json(service_settings_json("embeddings"));
    if (!config) exit_with_error(config.error());
    auto embedder = embeddings::make_embedder(*config);
    if (!embedder) exit_with_error(embedder.error());
    // The built-in embedder answers in microseconds to milliseconds: on the slots' I/O threads.
    // An HTTP endpoint may take seconds: on the handler threads, which keep heartbeating.
    const bool local = config->provider == embeddings::Provider::kHashing;
    run_worker(std::string(schema::services::kEmbeddings), options.worker,
               embeddings::make_embeddings_handler(std::move(embedder).value(), config->limits),
               stop_signals, {}, local ? inline_when_small() : InlineHook{});
}

}  // namespace

void add_embeddings_worker_command(CLI::App& worker_command) {
    auto [sub, options] =
        add_worker_subcommand<EmbeddingsOptions>(worker_command, schema::services::kEmbeddings,
                                                 "Serve `embeddings`: texts to vectors (built-in "
                                                 "feature hashing, or an OpenAI-compatible API)",
                                                 run_embeddings);
    // The [embeddings] settings (docs/configuration.md); flags override the file and the
    // environment.
    add_section_options(*sub, "embeddings",
                        {"--config", "--provider", "--dim", "--base-url", "--model",
                         "--api-key-env", "--batch-size", "--timeout-ms", "--max-retries"});
}

}  // namespace glassbox::cli
