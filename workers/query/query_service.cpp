// The query worker: route → engine sub-run → reflect → [escalate → sub-run]… → conclude.
#include "workers/query/query_service.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "schema/explain_builder.hpp"
#include "schema/collection_name.hpp"
#include "schema/messages.hpp"
#include "schema/messages_trace.hpp"
#include "schema/services.hpp"
#include "text/reference_resolution.hpp"
#include "workers/query/answer_provenance.hpp"
#include "workers/query/collection_signals.hpp"
#include "workers/query/llm_reflection.hpp"
#include "workers/query/router.hpp"
#include "workers/runtime/collection_check.hpp"

namespace glassbox::query {
namespace {

using base::ErrorType;
using base::make_error;
using nlohmann::json;
namespace explain = schema::explain;
using SteadyClock = std::chrono::steady_clock;

// The broker's service-discovery service (7/MDP MMI): "200" when a worker serves the name.
constexpr std::string_view kMmiService = "mmi.service";
constexpr std::chrono::milliseconds kDiscoveryTimeout{2'000};

std::chrono::milliseconds since(SteadyClock::time_point start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start);
}

explain::StepInfo step_info(SteadyClock::time_point started, const std::string& previous) {
    explain::StepInfo step;
    step.generated_at = std::chrono::system_clock::now();
    step.duration = since(started);
    if (!previous.empty()) step.derived_from = previous;
    return step;
}

// The query run's own explain messages (its sub-runs' come from the engines themselves).
class QueryTrace {
public:
    QueryTrace(runtime::RequestContext& context, bool explain)
        : context_(context), explain_(explain), run_(context.run()), session_(run_.question()) {}

    const explain::RunUris& run() const noexcept { return run_; }
    const std::string& session() const noexcept { return session_; }

    base::Result<void> send(const std::string& uri, std::vector<schema::Triple> triples,
                              runtime::ExplainState state = runtime::ExplainState::kOpen,
                              std::optional<base::Error> error = std::nullopt) {
        if (state != runtime::ExplainState::kOpen) ended_ = true;
        if (!explain_) return {};
        runtime::ExplainStep step;
        step.session = session_;
        step.explain_id = uri;
        step.triples = std::move(triples);
        step.state = state;
        step.error = std::move(error);
        auto sent = context_.send_explain(step);
        if (!sent) return sent.error();
        return {};
    }

    // Ends the request with `error`, the trace first with status error (unless cancelled: the
    // broker ends it then, §5.3).
    void fail(const base::Error& error) {
        if (context_.finished()) return;
        if (context_.cancelled()) {
            (void)context_.fail(context_.cancellation_error());
            return;
        }
        if (!ended_) {
            (void)send(session_, explain::trace_end(run_, std::chrono::system_clock::now(), schema::TraceStatus::kError),
                       runtime::ExplainState::kError, error);
        }
        (void)context_.fail(error);
    }

private:
    runtime::RequestContext& context_;
    bool explain_;
    explain::RunUris run_;
    std::string session_;
    bool ended_ = false;
};

const std::string& service_of(const QueryConfig& config, const std::string& engine) {
    if (engine == "graph-rag") return config.graph_rag_service;
    if (engine == "agent") return config.agent_service;
    return config.document_rag_service;
}

// Where a weak answer goes next: the agent first (it can chain lookups), then the other RAG.
std::optional<std::string> next_engine(const std::string& current, const std::vector<EngineRun>& runs) {
    static const std::vector<std::pair<std::string, std::vector<std::string>>> kOrder = {
        {"graph-rag", {"agent", "document-rag"}},
        {"document-rag", {"agent", "graph-rag"}},
        {"agent", {"graph-rag", "document-rag"}},
    };
    for (const auto& [from, nexts] : kOrder) {
        if (from != current) continue;
        for (const auto& next : nexts) {
            const bool tried = std::any_of(runs.begin(), runs.end(), [&](const EngineRun& r) { return r.engine == next; });
            if (!tried) return next;
        }
    }
    return std::nullopt;
}

// An engine's NotFound that the store confirms (the collection was never loaded) ends the
// request: no other engine can answer from a collection that does not exist, and escalating
// would hide the engine's own error behind a weak answer (issue 31). A NotFound the store does
// not confirm (a graph without documents, say) escalates as any failure does.
std::optional<base::Error> unknown_collection(runtime::RequestContext& context, const QueryConfig& config,
                                              const std::string& collection, const EngineRun& run) {
    if (!run.error || run.error->type != ErrorType::kNotFound) return std::nullopt;
    auto known = runtime::check_collection(context, config.store_service, collection, config.signal_timeout);
    if (known || known.error().type != ErrorType::kNotFound) return std::nullopt;
    return *run.error;
}

json engine_body(const std::string& engine, const schema::QueryRequest& request, const std::string& question,
                 const std::string& parent, const std::vector<std::string>& exclude) {
    if (engine == "graph-rag") {
        schema::GraphRagQuery q;
        q.query = question;
        if (!exclude.empty()) q.exclude = exclude;
        q.collection = request.collection;
        q.parent_uri = parent;
        q.streaming = request.streaming;
        return schema::encode(q);
    }
    if (engine == "agent") {
        schema::AgentRequest q;
        q.question = question;
        q.collection = request.collection;
        q.session_id = request.session_id;
        q.parent_uri = parent;
        // Not streaming: a streaming agent forwards its tools' explain messages as data, and the
        // reflection would then read more evidence than without streaming (its text is sent
        // whole once the FINAL is in, run_engine).
        return schema::encode(q);
    }
    schema::DocumentRagQuery q;
    q.query = question;
    q.collection = request.collection;
    q.parent_uri = parent;
    q.streaming = request.streaming;
    return schema::encode(q);
}

// An agent's FINAL says its answer in `response`, else `content` or `answer`.
void normalise_answer(json& final) {
    if (!final.is_object()) return;
    if (final.contains("response") && final["response"].is_string()) return;
    for (const char* key : {"content", "answer"}) {
        if (final.contains(key) && final[key].is_string()) {
            final["response"] = final[key];
            return;
        }
    }
}

// True when some worker serves `service` (asked of the broker; a failed question counts as no).
base::Result<void> served(runtime::RequestContext& context, const std::string& service) {
    auto answer = context.call(kMmiService, json(service), kDiscoveryTimeout);
    if (!answer) return answer.error();
    const json& body = answer->final;
    const bool yes = (body.is_number() && body.get<double>() == 200) || (body.is_string() && body == "200");
    if (!yes) return make_error(ErrorType::kUnknownService, "no worker serves \"" + service + "\"");
    return {};
}

// The answer text of an engine's PARTIAL data body: a RAG worker's `chunk` piece, or the agent's
// whole `answer` (its thoughts and observations are no answer text). "" for anything else.
std::string answer_piece(const json& body) {
    const std::string type = string_of(body, "message_type");
    if (type != "chunk" && type != "answer") return {};
    return string_of(body, "response");
}

// docs/query.md §1: while streaming, an engine's answer text goes on as it arrives, marked
// provisional (the reflection has not judged it yet) with the engine and the run's number.
json provisional_piece(const std::string& engine, std::size_t run, const std::string& text) {
    return json{{"message_type", "chunk"}, {"response", text}, {"engine", engine}, {"run", run}, {"provisional", true}};
}

// `question` is the request's, with a reference to the previous turn resolved, which the answer
// is judged against; `asked` what the engine is asked (the question, or an escalation's
// rephrasing of it); `index` is the run's number (0 the routed engine, then one per escalation).
EngineRun run_engine(runtime::RequestContext& context, const QueryConfig& config, const std::string& engine,
                     const schema::QueryRequest& request, const std::string& question, const std::string& asked,
                     const std::vector<std::string>& exclude, const std::string& parent, std::size_t index) {
    EngineRun run;
    run.engine = engine;
    run.query = asked;
    const auto started = SteadyClock::now();
    const std::string& service = service_of(config, engine);
    const auto failed = [&](base::Error error) {
        run.relevance = failed_relevance(error);
        run.reflection = model_free_reflection(run.relevance);
        run.error = std::move(error);
        run.duration = since(started);
        return run;
    };
    // The agent is optional in a deployment: ask first, so a missing one is a clean failure now
    // rather than a request that waits out the broker's grace for unknown services.
    if (engine == "agent") {
        if (auto ok = served(context, service); !ok) return failed(ok.error());
    }
    std::optional<base::Error> forward_failed;
    const auto on_reply = [&](const bus::Reply& reply) {
        if (reply.kind == bus::ReplyKind::kData && request.streaming && !forward_failed) {
            const std::string piece = answer_piece(reply.body);
            if (piece.empty()) return;
            if (auto sent = context.send_partial(provisional_piece(engine, index, piece)); !sent)
                forward_failed = sent.error();
            return;
        }
        if (reply.kind != bus::ReplyKind::kExplain) return;
        if (run.session.empty()) run.session = string_of(reply.body, "session");
        const std::string id = string_of(reply.body, "explain_id");
        if (!id.empty() && id != run.session) run.last_step = id;
        if (forward_failed) return;
        if (auto sent = context.send_partial(reply.body); !sent) forward_failed = sent.error();
    };
    auto called = context.call(service, engine_body(engine, request, asked, parent, exclude), config.call_timeout, on_reply);
    if (!called) return failed(called.error());
    if (forward_failed) return failed(*forward_failed);
    run.final = std::move(called->final);
    normalise_answer(run.final);
    if (engine == "agent" && request.streaming) {
        const std::string text = string_of(run.final, "response");
        if (!text.empty()) {
            if (auto sent = context.send_partial(provisional_piece(engine, index, text)); !sent) return failed(sent.error());
        }
    }
    if (const std::string session = string_of(run.final, "session"); !session.empty()) run.session = session;
    if (const std::string last = string_of(run.final, "explain_id"); !last.empty()) run.last_step = last;
    // The agent forwards its tools' sub-runs' explain messages as data ({"message_type":
    // "explain", "explain": {…}}): their kept edges and chunks are its evidence too.
    auto explain = std::move(called->explain);
    for (const auto& body : called->data) {
        if (!body.is_object() || string_of(body, "message_type") != "explain") continue;
        if (const auto inner = body.find("explain"); inner != body.end() && inner->is_object())
            explain.push_back(*inner);
    }
    run.evidence = read_evidence(explain, run.final);
    run.relevance = reflect(question, run.evidence);
    run.reflection = model_free_reflection(run.relevance);
    run.duration = since(started);
    // The model's judgement, when configured (its time is the reflection's, not the engine's).
    if (config.reflection == "llm") judge_with_llm(context, config, question, run);
    return run;
}

// The conversation's last turn (the trace service's `turns`, as the agent reads them), for
// resolving a follow-up's reference; none without a session, or when the fetch fails (logged:
// the question then goes on as asked).
std::vector<text::EarlierTurn> previous_turns(runtime::RequestContext& context, const QueryConfig& config,
                                              const std::string& session_id, const std::string& current_run) {
    std::vector<text::EarlierTurn> turns;
    if (session_id.empty()) return turns;
    // The previous turn's answer may have reached the asker before its trace reached the store:
    // the trace service waits (within the history timeout) for the conversation's other runs
    // to end, so a quick follow-up still reads it (issue 31).
    const json body = {{"op", "turns"},
                       {"session_id", session_id},
                       {"limit", 1},
                       {"settle_ms", schema::turns_settle_ms(config.history_timeout)},
                       {"current", current_run}};
    auto called = context.call(config.trace_service, body, config.history_timeout);
    if (!called || !called->final.is_object() || !called->final.contains("turns") || !called->final["turns"].is_array()) {
        base::component_logger("worker.query")->warn("event=history_unavailable session=\"{}\" error=\"{}\"", session_id,
                                                     called ? "the reply has no turns list" : called.error().describe());
        return turns;
    }
    for (const json& turn : called->final["turns"]) {
        if (!turn.is_object()) continue;
        turns.push_back({string_of(turn, "question"), string_of(turn, "answer"), string_of(turn, "short_answer")});
    }
    return turns;
}

json route_json(const RouteDecision& d) {
    json fired = json::array();
    for (const auto& r : d.fired) fired.push_back(r.name);
    json scores = json::object();
    for (const auto& [name, score] : d.scores) scores[name] = score;
    return json{{"engine", d.engine},       {"method", d.method},   {"question_type", d.question_type},
                {"rules_fired", fired},     {"confidence", d.confidence}, {"scores", scores}};
}

json runs_json(const std::vector<EngineRun>& runs, const std::string& question) {
    json out = json::array();
    for (const auto& r : runs) {
        json item{{"engine", r.engine},
                  {"relevance", r.relevance.score},
                  {"reason", r.relevance.reason},
                  {"reflection", r.reflection.method},
                  {"duration_ms", r.duration.count()}};
        if (r.query != question) item["query"] = r.query;
        if (!r.reflection.fallback.empty()) item["reflection_fallback"] = r.reflection.fallback;
        if (!r.session.empty()) item["session"] = r.session;
        if (r.error) item["error"] = schema::encode(*r.error);
        out.push_back(std::move(item));
    }
    return out;
}

std::uint64_t token_sum(const std::vector<EngineRun>& runs, const char* key) {
    std::uint64_t sum = 0;
    for (const auto& r : runs) {
        if (r.final.is_object() && r.final.contains(key) && r.final[key].is_number_unsigned())
            sum += r.final[key].get<std::uint64_t>();
    }
    return sum;
}

void handle_query(runtime::RequestContext& context, const QueryConfig& config, const Router& router) {
    auto decoded = schema::decode<schema::QueryRequest>(context.body());
    if (!decoded) {
        (void)context.fail(decoded.error());
        return;
    }
    const schema::QueryRequest& request = *decoded;
    if (request.query.size() > config.max_question_bytes) {
        (void)context.fail(make_error(ErrorType::kInvalidRequest,
                                      "the question is " + std::to_string(request.query.size()) +
                                          " bytes; at most " + std::to_string(config.max_question_bytes) +
                                          " are accepted"));
        return;
    }
    if (request.query.find_first_not_of(" \t\r\n") == std::string::npos) {
        (void)context.fail(make_error(ErrorType::kInvalidRequest, "\"query\" must be a non-empty question"));
        return;
    }
    if (!schema::has_words(request.query)) {
        (void)context.fail(make_error(ErrorType::kInvalidRequest, "the question has no words to search for"));
        return;
    }
    // The request id goes into the trace as it is, so it is checked like the gateway checks it.
    if (!request.request_id.empty() && !schema::usable_request_id(request.request_id)) {
        (void)context.fail(make_error(ErrorType::kInvalidRequest,
                                      "\"request_id\" must be 1-" + std::to_string(schema::kMaxRequestIdBytes) +
                                          " printable ASCII characters without spaces"));
        return;
    }

    QueryTrace trace(context, config.explain);
    const auto& run = trace.run();
    const auto fail = [&](const base::Error& error) { trace.fail(error); };
    // A top-level run (the query worker is always one) records its conversation (issue 18).
    std::optional<std::string_view> conversation;
    if (!request.session_id.empty()) conversation = request.session_id;
    if (auto sent = trace.send(trace.session(),
                               explain::question(run, request.query, std::chrono::system_clock::now(),
                                                 explain::worker_agent_uri(schema::services::kQuery),
                                                 std::nullopt, conversation, request.request_id,
                                                 request.collection.empty() ? schema::kDefaultCollection
                                                                            : std::string_view{request.collection}));
        !sent) {
        return fail(sent.error());
    }

    // Routing, of the question with a follow-up's reference to the previous turn resolved.
    const auto routing_started = SteadyClock::now();
    const auto turns = previous_turns(context, config, request.session_id, run.uuid());
    const auto resolved = text::resolve_reference(request.query, turns);
    const auto excluded = text::already_answered(request.query, turns, resolved);
    RouteDecision decision;
    if (request.mode == schema::QueryMode::kAuto) {
        QuestionFeatures features = question_features(resolved.question);
        if (config.collection_signals) {
            const auto why = ask_collection(context, config.store_service, request.collection, config.signal_timeout,
                                            features);
            if (!why.empty()) base::component_logger("worker.query")->debug("event=query_signals {}", why);
        }
        decision = router.route(features);
    } else {
        decision.engine = std::string(schema::to_string(request.mode));
        decision.method = "explicit";
        decision.confidence = 1.0;
    }
    explain::Routing routing{decision.method, {}, decision.confidence, decision.engine, decision.scores};
    for (const auto& r : decision.fired) routing.rules_fired.push_back(r.name);
    routing.question_type = decision.question_type;
    if (resolved.resolved()) {
        routing.resolved_question = resolved.question;
        routing.resolved_reference = resolved.reference + " -> " + resolved.entity + " (" + resolved.rule + ")";
    }
    routing.excluded = excluded.entities;
    if (auto sent = trace.send(run.routing_decision(),
                               explain::routing_decision(run, step_info(routing_started, ""), routing));
        !sent) {
        return fail(sent.error());
    }

    // Engines: the routed one, then escalations while the answer is weak.
    std::vector<EngineRun> runs;
    json escalations = json::array();
    std::string parent = run.routing_decision();
    std::string engine = decision.engine;
    std::string asked = resolved.question;  // an escalation may ask the next engine a rephrasing
    for (;;) {
        if (context.cancelled()) return fail(context.cancellation_error());
        runs.push_back(run_engine(context, config, engine, request, resolved.question, asked, excluded.entities, parent,
                                  runs.size()));
        const EngineRun& last = runs.back();
        if (!last.error && last.relevance.score >= config.relevance_threshold) break;
        if (auto unknown = unknown_collection(context, config, request.collection, last)) return fail(*unknown);
        if (runs.size() > config.max_escalations) break;
        const auto next = next_engine(engine, runs);
        if (!next) break;
        const auto escalation_started = SteadyClock::now();
        const std::size_t n = runs.size() - 1;
        const std::string reason = last.error ? "engine failed: " + last.relevance.reason
                                              : "relevance below " + std::to_string(config.relevance_threshold).substr(0, 4) +
                                                    " (" + last.relevance.reason + ")";
        explain::EscalationInfo info{reason, last.relevance.score, *next, engine, last.reflection};
        // With a model to ask, the next engine gets a question reworded for it (the trace's
        // question stays the one asked); without, or when that fails, the question itself.
        asked = resolved.question;
        if (config.reflection == "llm") {
            const auto rephrasing = rephrase_for_escalation(context, config, resolved.question, engine, reason);
            if (rephrasing.rephrased) {
                info.rephrased_question = rephrasing.question;
                asked = rephrasing.question;
            } else {
                info.rephrase_fallback = rephrasing.fallback;
            }
        }
        const std::string derived = last.last_step.empty() ? parent : last.last_step;
        if (auto sent = trace.send(run.escalation(n), explain::escalation(run, n, step_info(escalation_started, derived), info));
            !sent) {
            return fail(sent.error());
        }
        json escalated{{"from", engine}, {"to", *next}, {"reason", reason}, {"relevance", last.relevance.score},
                       {"reflection", last.reflection.method}};
        if (!info.rephrased_question.empty()) escalated["query"] = info.rephrased_question;
        if (!info.rephrase_fallback.empty()) escalated["rephrase_fallback"] = info.rephrase_fallback;
        escalations.push_back(std::move(escalated));
        // The text streamed for this run is not the answer (yet): the reader drops it.
        if (request.streaming) {
            if (auto sent = context.send_partial(json{{"message_type", "retract"}, {"engine", engine}, {"run", n},
                                                       {"reason", reason}});
                !sent) {
                return fail(sent.error());
            }
        }
        parent = run.escalation(n);
        engine = *next;
    }

    // The best answer wins (the earliest on a tie); failed runs never do.
    std::optional<std::size_t> winner;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        if (runs[i].error) continue;
        if (!winner || runs[i].relevance.score > runs[*winner].relevance.score) winner = i;
    }
    if (!winner) {
        const base::Error& error = *runs.back().error;
        return fail(make_error(error.type, runs.size() == 1 ? error.message
                                                            : "every engine failed; the last: " + error.message));
    }
    const EngineRun& won = runs[*winner];
    // A retracted run won after all (the engines escalated to did worse): the last run's text is
    // retracted too, and the winner's sent again, whole.
    if (request.streaming && *winner + 1 < runs.size()) {
        if (auto sent = context.send_partial(json{{"message_type", "retract"}, {"engine", runs.back().engine},
                                                   {"run", runs.size() - 1}, {"reason", "an earlier run answered better"}});
            !sent) {
            return fail(sent.error());
        }
        const std::string text = string_of(won.final, "response");
        json replay = provisional_piece(won.engine, *winner, text);
        replay["provisional"] = false;
        replay["replay"] = true;
        if (auto sent = context.send_partial(replay); !sent) return fail(sent.error());
    }
    const auto provenance = answer_provenance(decision, runs, *winner);
    const std::string answer_text = string_of(won.final, "response");
    const auto conclusion_started = SteadyClock::now();
    auto triples = explain::routed_conclusion(run, step_info(conclusion_started, won.last_step.empty() ? parent : won.last_step),
                                              explain::StoredText{answer_text, std::nullopt}, provenance,
                                              won.evidence.short_answer);
    const auto reflected = explain::reflection(run.conclusion(), won.reflection);
    triples.insert(triples.end(), reflected.begin(), reflected.end());
    const auto end = explain::trace_end(run, std::chrono::system_clock::now(), schema::TraceStatus::kComplete);
    triples.insert(triples.end(), end.begin(), end.end());
    if (auto sent = trace.send(run.conclusion(), std::move(triples), runtime::ExplainState::kComplete); !sent) {
        return fail(sent.error());
    }

    json body = won.final.is_object() ? won.final : json::object();
    body["message_type"] = "chunk";
    body["end_of_stream"] = true;
    body["end_of_session"] = true;
    body["in_token"] = token_sum(runs, "in_token");
    body["out_token"] = token_sum(runs, "out_token");
    body["session"] = trace.session();
    body["explain_id"] = run.conclusion();
    body["engine"] = won.engine;
    body["engine_session"] = won.session;
    body["route"] = route_json(decision);
    if (resolved.resolved()) {
        body["resolved_question"] = resolved.question;
        body["resolved_reference"] = {{"reference", resolved.reference}, {"entity", resolved.entity}, {"rule", resolved.rule}};
    }
    body["relevance"] = won.relevance.score;
    body["runs"] = runs_json(runs, resolved.question);
    body["escalations"] = std::move(escalations);
    body["provenance"] = provenance_json(provenance);
    (void)context.reply(body);
}

}  // namespace

runtime::Handler make_query_handler(QueryConfig config) {
    // Shared by the handler's threads, read-only after construction (the compiled rules and the
    // classifier's example vectors are built once).
    auto router = std::make_shared<const Router>(config.rules);
    auto shared = std::make_shared<const QueryConfig>(std::move(config));
    return [router, shared](runtime::RequestContext& context) { handle_query(context, *shared, *router); };
}

}  // namespace glassbox::query
