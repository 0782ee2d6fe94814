// `glassbox invoke [query|graph-rag|document-rag|agent]`: asks one question (through the
// `query` router unless a target is named), shows one line per explain step as it arrives (-x;
// the agent's thoughts, tool calls and observations always), then the answer with numbered
// citations, its sources, the route it took and the trace.
#include <cstdint>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bus/bus_client.hpp"
#include "cli/client_options.hpp"
#include "cli/commands.hpp"
#include "cli/question_request.hpp"
#include "cli/render/answer_render.hpp"
#include "cli/render/trace_render.hpp"
#include "cli/settings.hpp"
#include "cli/trace_labels.hpp"
#include "schema/messages.hpp"
#include "schema/services.hpp"

namespace glassbox::cli {
namespace {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

// RAG answers may take several LLM calls; a slow model gets two minutes by default.
constexpr int kDefaultInvokeTimeoutMs = 120'000;

struct InvokeOptions {
    ClientOptions client;
    std::string service;  // query, graph-rag or document-rag
    std::string question;
    bool explain = false;
    bool no_stream = false;
    std::optional<std::string> parent_uri;
    std::string session;  // the conversation this question is a turn of
    // Each target's own parameters, bound to its flags (0: the worker's default); question_body
    // adds the question and the fields every target shares.
    TargetParameters targets;
};

json request_body(const InvokeOptions& o) {
    QuestionRequest request;
    request.service = o.service;
    request.question = o.question;
    request.collection = settings().text("client.collection");
    request.streaming = !o.no_stream;
    request.session = o.session;
    request.parent_uri = o.parent_uri;
    return question_body(request, o.targets);
}

// Text output: explain lines as they arrive (with -x), then, once the answer is whole, the short
// answer, the answer with `[n]` at its cited spans, and the footer (model, Sources, trace).
// The answer is printed once whole because the markers' places are known only then; --json
// shows every streamed piece as it comes.
class AnswerPrinter {
public:
    explicit AnswerPrinter(bool explain) : explain_(explain) {}
    // -x names the entities of each step by label (the store's), as the messages carry IRIs.
    void set_labeler(cli::render::Labeler labeler) { summaries_.set_labeler(std::move(labeler)); }

    void data(const json& body) {
        // The query router forwards its engines' explain messages as data: a sub-trace's steps,
        // shown indented under the routing or escalation step that called it. (The agent wraps
        // its tools' explain messages in {"message_type": "explain", "explain": …}: agent_step.)
        if (string_field(body, "message_type") == "explain" &&
            !(body.is_object() && body.contains("explain"))) {
            if (explain_) std::cout << "  " << summaries_.next(body) << std::endl;
            return;
        }
        // The query router streams its engines' text provisionally: a run it escalated past is
        // retracted, and an earlier run that won after all comes again whole (docs/query.md §1).
        if (string_field(body, "message_type") == "retract") {
            streamed_.clear();
            if (explain_)
                std::cout << "  (answer text of "
                          << cli::render::safe_text(string_field(body, "engine"), false)
                          << " retracted: "
                          << cli::render::safe_text(string_field(body, "reason"), false) << ")"
                          << std::endl;
            return;
        }
        if (body.is_object() && body.value("replay", false)) streamed_.clear();
        streamed_ += string_field(body, "response");
        agent_step(body);
    }

    void explain(const json& body) {
        if (session_.empty()) session_ = string_field(body, "session");
        if (!explain_) return;
        std::cout << summaries_.next(body) << std::endl;
    }

    // The agent's steps as they happen: one line each (its tools' own explain steps with -x).
    void agent_step(const json& body) {
        const std::string type = string_field(body, "message_type");
        const auto iteration = body.is_object() ? body.value("iteration", json(0)) : json(0);
        const std::string n = iteration.is_number() ? iteration.dump() : std::string("?");
        const auto line = [](std::string_view text) {
            return cli::render::safe_text(std::string(text.substr(0, 300)), false);
        };
        if (type == "thought") {
            std::cout << "[" << n << "] thought: " << line(string_field(body, "content"))
                      << std::endl;
        } else if (type == "action") {
            const json args =
                body.is_object() ? body.value("args", json::object()) : json::object();
            std::cout << "[" << n << "] action: " << line(string_field(body, "tool")) << ' '
                      << line(args.dump(-1, ' ', false, json::error_handler_t::replace))
                      << std::endl;
        } else if (type == "observation") {
            const bool error = body.is_object() && body.value("error", false);
            std::cout << "[" << n << "] observation" << (error ? " (error)" : "") << ": "
                      << cli::render::summarize_observation(string_field(body, "content"), error)
                      << std::endl;
        } else if (type == "explain" && explain_ && body.is_object() && body.contains("explain")) {
            std::cout << "    " << summaries_.next(body["explain"]) << std::endl;
        }
    }

    void final(const json& body) {
        if (body.is_object() && body.contains("termination")) {
            std::cout << "\n(" << cli::render::safe_text(string_field(body, "termination"), false)
                      << " after " << number(body, "iterations") << " iteration(s))\n";
        }
        const std::string session = string_field(body, "session");
        if (!session.empty()) session_ = session;
        // The FINAL's fields are read leniently: a field of the wrong shape reads as absent.
        std::vector<schema::RagCitation> citations;
        if (auto decoded = schema::decode<schema::RagResponse>(body))
            citations = decoded->citations;
        std::string answer = string_field(body, "response");
        if (answer.empty()) answer = streamed_;

        if (explain_) std::cout << '\n';
        const std::string short_answer = string_field(body, "answer");
        if (!short_answer.empty())
            std::cout << "Answer: " << cli::render::safe_text(short_answer, false) << "\n\n";
        const std::string marked = cli::render::mark_citations(answer, citations);
        std::cout << cli::render::safe_text(marked, true);
        if (!marked.empty() && marked.back() != '\n') std::cout << '\n';
        if (const auto trust = cli::render::confidence_line(body); !trust.empty())
            std::cout << trust << '\n';

        const std::string model = string_field(body, "model");
        if (!model.empty() || body.contains("in_token")) {
            std::cout << "\nmodel " << cli::render::safe_text(model.empty() ? "-" : model, false)
                      << ", tokens " << number(body, "in_token") << " in / "
                      << number(body, "out_token") << " out\n";
        }
        const json sources =
            body.is_object() ? body.value("sources", json::array()) : json::array();
        if (!citations.empty()) {
            std::cout << "sources:\n" << cli::render::render_sources(citations, answer);
        } else if (sources.is_array() && !sources.empty()) {
            // An answer that cites nothing (a template without markers): what it drew on.
            std::cout << "sources (not cited):\n";
            int n = 0;
            for (const auto& source : sources) {
                if (!source.is_string()) continue;
                std::cout << "  - " << cli::render::safe_text(source.get<std::string>(), false)
                          << '\n';
                if (++n == kMaxUncitedSources) break;
            }
        } else {
            std::cout << "sources: none\n";
        }
        route(body);
        if (!session_.empty()) {
            const std::string safe = cli::render::safe_text(session_, false);
            std::cout << "trace: " << safe << "\n  glassbox traces show " << safe << '\n';
        }
        std::cout << std::flush;
    }

    // Before an error goes to stderr: what was streamed so far, so the reader sees it.
    void abort() {
        if (!streamed_.empty()) std::cout << cli::render::safe_text(streamed_, true) << '\n';
        std::cout << std::flush;
    }

private:
    static constexpr int kMaxUncitedSources = 10;

    // A routed answer's route, escalations and provenance (the `query` service's FINAL).
    static void route(const json& body) {
        if (!body.is_object() || !body.contains("route") || !body["route"].is_object()) return;
        const json& route = body["route"];
        std::string rules;
        if (route.contains("rules_fired") && route["rules_fired"].is_array()) {
            for (const auto& r : route["rules_fired"])
                if (r.is_string()) rules += (rules.empty() ? "" : ", ") + r.get<std::string>();
        }
        std::cout << "route: " << cli::render::safe_text(string_field(route, "engine"), false)
                  << " by " << cli::render::safe_text(string_field(route, "method"), false)
                  << (rules.empty() ? "" : " (" + cli::render::safe_text(rules, false) + ")")
                  << '\n';
        if (body.contains("escalations") && body["escalations"].is_array()) {
            for (const auto& e : body["escalations"]) {
                std::cout << "escalated: " << cli::render::safe_text(string_field(e, "from"), false)
                          << " -> " << cli::render::safe_text(string_field(e, "to"), false) << ": "
                          << cli::render::safe_text(string_field(e, "reason"), false) << '\n';
            }
        }
        const std::string engine = string_field(body, "engine");
        if (!engine.empty())
            std::cout << "answered by: " << cli::render::safe_text(engine, false) << '\n';
        if (body.contains("provenance") && body["provenance"].is_object()) {
            const json& p = body["provenance"];
            std::string chain;
            if (p.contains("derivation") && p["derivation"].is_array()) {
                for (const auto& d : p["derivation"])
                    if (d.is_string()) chain += (chain.empty() ? "" : " > ") + d.get<std::string>();
            }
            std::cout << "provenance: tier " << number(p, "aggregate_tier")
                      << " (the weakest source), " << cli::render::safe_text(chain, false) << '\n';
        }
    }

    static std::string number(const json& body, const char* key) {
        if (!body.is_object()) return "0";
        const auto it = body.find(key);
        return it != body.end() && it->is_number() ? it->dump() : std::string("0");
    }

    bool explain_;
    cli::render::StepSummaries summaries_;
    std::string streamed_;
    std::string session_;
};

// Whether the broker sends this run's explain messages (docs/protocol.md §4.1). -x prints them
// and --json prints every reply; otherwise nothing reads them: the text output takes the trace's
// session from the FINAL, which every engine's carries (query, graph-rag, document-rag, agent).
// Forwarded sub-runs' steps, which the query router and the agent send as data, are shown with
// -x only. The run's trace is stored whole either way.
bus::ExplainDelivery explain_delivery(const InvokeOptions& options) {
    return options.explain || options.client.json ? bus::ExplainDelivery::kStream
                                                  : bus::ExplainDelivery::kNone;
}

void run_invoke(const InvokeOptions& options) {
    if (options.question.empty()) {
        exit_with_error(make_error(ErrorType::kInvalidRequest, "-q: the question is empty"));
    }
    const std::string body =
        request_body(options).dump(-1, ' ', false, json::error_handler_t::replace);
    bus::BusClientConfig config = options.client.bus_config();
    config.request_options.explain = explain_delivery(options);
    bus::BusClient bus(config);
    auto stream = bus::open_stream(bus, options.service, body, options.client.timeout());
    if (!stream) exit_with_error(stream.error());

    AnswerPrinter printer(options.explain);
    if (options.explain)
        printer.set_labeler(store_labeler(options.client, settings().text("client.collection")));
    // The client's backstop (deadline + grace) ends the stream, so this wait always terminates.
    const auto wait = options.client.timeout() + config.deadline_grace + std::chrono::seconds{1};
    if (options.client.json) {
        auto final = print_json_replies(*stream, wait);
        if (!final) exit_with_error(final.error());
        if (auto error = body_error(final->body)) exit_with_error(*error);
        return;
    }
    auto last = feed_replies(*stream, wait, printer);
    if (!last) exit_with_error(last.error());
    const auto error = last->kind == bus::ReplyKind::kError ? last->error : body_error(last->body);
    if (error) {
        printer.abort();
        exit_with_error(*error);
    }
    printer.final(last->body);
}

// The options every target shares; `required` is false on `invoke` itself, where a missing -q
// is reported by run_invoke (a subcommand's own -q would otherwise be demanded of the parent).
void add_common_options(CLI::App& cmd, InvokeOptions& options, bool required) {
    auto* question = cmd.add_option("-q,--question,--query", options.question,
                                    "The question (--query: another name for it)");
    if (required) question->required();
    add_setting_option(cmd, "client.collection", "--collection");
    cmd.add_flag("-x,--explain", options.explain,
                 "Print one line per explain step as it arrives (stage, URI, key facts)");
    cmd.add_flag("--no-stream", options.no_stream,
                 "Ask for the whole answer at once instead of streamed");
}

void add_session_option(CLI::App& cmd, InvokeOptions& options) {
    cmd.add_option(
        "--session", options.session,
        "A conversation id: the run is recorded as a turn of it (glassbox sessions show)");
}

void add_query_options(CLI::App& cmd, InvokeOptions& options) {
    cmd.add_option("--mode", options.targets.mode,
                   "auto (route by rules, classifier, default), graph-rag, document-rag or agent")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "graph-rag", "document-rag", "agent"}));
    cmd.add_option("--min-confidence", options.targets.query_min_confidence,
                   "Below this calibrated confidence the answer says it does not know; the router "
                   "applies it to its answer (default: the worker's query.min_confidence)")
        ->check(CLI::Range(0.0, 1.0));
    add_session_option(cmd, options);
}

void add_rag_subcommand(CLI::App& invoke, const std::string& service,
                        const std::string& description) {
    auto [cmd, options] = add_command<InvokeOptions>(invoke, service, description, run_invoke);
    options->service = service;
    if (service == schema::services::kQuery) {
        add_common_options(*cmd, *options, true);
        add_query_options(*cmd, *options);
        add_client_options(*cmd, options->client, kDefaultInvokeTimeoutMs);
        return;
    }
    add_common_options(*cmd, *options, true);
    cmd->add_option("--parent-uri", options->parent_uri,
                    "The calling step's URI: this run becomes its sub-trace");
    add_session_option(*cmd, *options);
    if (service == schema::services::kGraphRag) {
        // The defaults named from the contract's constants, so the help cannot drift from them.
        const auto zero_means = [](std::uint32_t value) {
            return " (0: " + std::to_string(value) + ")";
        };
        cmd->add_option(
            "--entity-limit", options->targets.graph_rag.entity_limit,
            "Seed entities, shared among concepts" + zero_means(schema::kDefaultEntityLimit));
        cmd->add_option("--triple-limit", options->targets.graph_rag.triple_limit,
                        "Triples per entity and hop" + zero_means(schema::kDefaultTripleLimit));
        cmd->add_option("--max-subgraph-size", options->targets.graph_rag.max_subgraph_size,
                        "Edges explored at most" + zero_means(schema::kDefaultMaxSubgraphSize));
        cmd->add_option("--max-path-length", options->targets.graph_rag.max_path_length,
                        "Hops from the seeds" + zero_means(schema::kDefaultMaxPathLength));
        cmd->add_option("--edge-score-limit", options->targets.graph_rag.edge_score_limit,
                        "Edges kept by the semantic pre-filter for scoring" +
                            zero_means(schema::kDefaultEdgeScoreLimit));
        cmd->add_option("--edge-limit", options->targets.graph_rag.edge_limit,
                        "Edges kept for the answer" + zero_means(schema::kDefaultEdgeLimit));
        cmd->add_option("--min-confidence", options->targets.graph_rag.min_confidence,
                        "Below this calibrated confidence the answer says it does not know "
                        "(default: the worker's rag.min_confidence)")
            ->check(CLI::Range(0.0, 1.0));
    } else if (service == schema::services::kAgent) {
        cmd->add_option("--max-iterations", options->targets.agent.max_iterations,
                        "Iterations at most (0: the worker's limit, 10 by default)");
        cmd->add_option("--tool", options->targets.agent.tools,
                        "Offer only this tool (repeat for several)");
        cmd->add_option("--min-confidence", options->targets.agent.min_confidence,
                        "Below this calibrated confidence the answer says it does not know "
                        "(default: the worker's agent.min_confidence)")
            ->check(CLI::Range(0.0, 1.0));
    } else {
        cmd->add_option("--doc-limit", options->targets.document_rag.doc_limit,
                        "Chunks the answer uses (0: 20)");
        cmd->add_option(
            "--fetch-limit", options->targets.document_rag.fetch_limit,
            "Chunks retrieved; more than --doc-limit re-ranks them (0: max(20, --doc-limit))");
        cmd->add_option("--min-confidence", options->targets.document_rag.min_confidence,
                        "Below this calibrated confidence the answer says it does not know "
                        "(default: the worker's rag.min_confidence)")
            ->check(CLI::Range(0.0, 1.0));
    }
    add_client_options(*cmd, options->client, kDefaultInvokeTimeoutMs);
}

}  // namespace

void add_invoke_command(CLI::App& app) {
    auto* invoke = app.add_subcommand("invoke",
                                      "Ask a question: through the query router by default "
                                      "(`invoke -q ...` = `invoke query -q ...`), "
                                      "or straight to graph RAG, document RAG or the agent; -x "
                                      "shows each step, --json prints every message "
                                      "of the stream as one JSON line");
    invoke->require_subcommand(0, 1);
    // No target named: the query router.
    auto routed = std::make_shared<InvokeOptions>();
    routed->service = std::string(schema::services::kQuery);
    add_common_options(*invoke, *routed, false);
    add_query_options(*invoke, *routed);
    add_client_options(*invoke, routed->client, kDefaultInvokeTimeoutMs);
    invoke->callback([invoke, routed] {
        if (!invoke->get_subcommands().empty()) return;
        run_invoke(*routed);
    });
    add_rag_subcommand(
        *invoke, std::string(schema::services::kQuery),
        "Route the question (rules, classifier, what the collection holds) to graph RAG, "
        "document RAG or the agent; escalate a weak answer; give its provenance");
    add_rag_subcommand(
        *invoke, std::string(schema::services::kGraphRag),
        "Answer from the knowledge graph: concepts, entities, traversal, edge scoring, synthesis");
    add_rag_subcommand(
        *invoke, std::string(schema::services::kDocumentRag),
        "Answer from the documents: concepts, hybrid chunk retrieval, re-ranking, synthesis");
    add_rag_subcommand(
        *invoke, std::string(schema::services::kAgent),
        "Answer in steps (ReAct): the agent plans, calls the RAG engines and the store as tools, "
        "and shows its reasoning as it goes");
}

}  // namespace glassbox::cli
