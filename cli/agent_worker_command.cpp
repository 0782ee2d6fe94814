// `glassbox worker agent`: the ReAct agent service (docs/agent.md).
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "cli/client_options.hpp"
#include "cli/settings.hpp"
#include "cli/sparql_settings.hpp"
#include "cli/worker_support.hpp"
#include "schema/services.hpp"
#include "workers/agent/agent_config.hpp"
#include "workers/agent/agent_service.hpp"
#include "workers/agent/sparql_graph_query.hpp"
#include "workers/agent/tool_catalog.hpp"

namespace glassbox::cli {
namespace {

// graph-query's engine: the configured SPARQL endpoint through the one SPARQL client.
class ClientEngine final : public agent::SparqlEngine {
public:
    explicit ClientEngine(http::SparqlConfig config, std::string engine)
        : client_(std::move(config)), name_(std::move(engine)) {
        name_.append(name_.empty() ? "" : " at ").append(client_.config().query_url);
    }
    base::Result<nlohmann::json> select(std::string_view query) override {
        return client_.select(query);
    }
    std::string name() const override { return name_; }

private:
    http::SparqlClient client_;
    std::string name_;
};

struct AgentOptions {
    WorkerOptions worker;
    agent::AgentConfig config;
    std::string tools_file;
    bool print_tools = false;
};

void run_agent(const AgentOptions& options) {
    if (options.print_tools) {
        std::cout << agent::default_tools_text() << '\n';
        return;
    }
    std::vector<agent::Tool> tools = agent::default_tools();
    if (!options.tools_file.empty()) {
        auto loaded = agent::load_tools(options.tools_file);
        if (!loaded) exit_with_error(loaded.error());
        tools = std::move(*loaded);
    }
    const sigset_t stop_signals = block_stop_signals();
    agent::AgentConfig config = options.config;
    config.call_timeout = std::chrono::milliseconds{settings().integer("agent.call_timeout_ms")};
    config.max_iterations = static_cast<std::uint32_t>(settings().integer("agent.max_iterations"));
    config.min_confidence = settings().number("agent.min_confidence");
    const char* no_explain = std::getenv("GLASSBOX_BENCH_NO_EXPLAIN");
    config.explain = !(no_explain != nullptr && std::string_view(no_explain) == "1");
    if (auto sparql = sparql_config_from_settings()) {
        const std::string engine = settings().text("sparql.engine");
        config.sparql = std::make_shared<ClientEngine>(std::move(*sparql),
                                                       engine.empty() ? "SPARQL endpoint" : engine);
    }
    run_worker(std::string(schema::services::kAgent), options.worker,
               agent::make_agent_handler(config, std::move(tools)), stop_signals);
}

}  // namespace

void add_agent_worker_command(CLI::App& worker_command) {
    auto [sub, options] =
        add_worker_subcommand<AgentOptions>(worker_command, schema::services::kAgent,
                                            "Serve `agent`: multi-step answers (ReAct) with the "
                                            "RAG engines and the store as tools (docs/agent.md)",
                                            run_agent);
    auto& c = options->config;
    sub->add_option("--tools", options->tools_file,
                    "Tool file (JSON; default: the built-in tools)");
    sub->add_flag("--print-tools", options->print_tools, "Print the built-in tool file and exit");
    add_setting_option(*sub, "agent.max_iterations", "--max-iterations");
    sub->add_option("--llm-service", c.llm_service, "Service answering the agent-react template")
        ->capture_default_str();
    sub->add_option("--store-service", c.store_service, "The knowledge store (triples-query)")
        ->capture_default_str();
    sub->add_option("--embeddings-service", c.embeddings_service,
                    "Resolves names to entities (triples-query)")
        ->capture_default_str();
    sub->add_option("--graph-rag-service", c.graph_rag_service, "knowledge-query's service")
        ->capture_default_str();
    sub->add_option("--document-rag-service", c.document_rag_service, "document-query's service")
        ->capture_default_str();
    sub->add_option("--trace-service", c.trace_service, "Where conversation turns are fetched")
        ->capture_default_str();
    sub->add_option("--react-template", c.react_template, "The llm template of each step")
        ->capture_default_str();
    add_setting_option(*sub, "agent.call_timeout_ms", "--call-timeout-ms");
    add_setting_option(*sub, "agent.min_confidence", "--min-confidence");
}

}  // namespace glassbox::cli
