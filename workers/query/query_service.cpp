// The query worker: route → engine sub-run → reflect → [escalate → sub-run]… → conclude.
#include "workers/query/query_service.hpp"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "schema/collection_name.hpp"
#include "schema/explain_builder.hpp"
#include "schema/messages.hpp"
#include "schema/messages_trace.hpp"
#include "schema/services.hpp"
#include "schema/untrusted_json.hpp"
#include "text/reference_resolution.hpp"
#include "workers/query/answer_provenance.hpp"
#include "workers/query/collection_signals.hpp"
#include "workers/query/engine_disagreement.hpp"
#include "workers/query/llm_reflection.hpp"
#include "workers/query/router.hpp"
#include "workers/query/router_abstention.hpp"
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
            (void)send(session_,
                       explain::trace_end(run_, std::chrono::system_clock::now(),
                                          schema::TraceStatus::kError),
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
std::optional<std::string> next_engine(const std::string& current,
                                       const std::vector<EngineRun>& runs) {
    static const std::vector<std::pair<std::string, std::vector<std::string>>> kOrder = {
        {"graph-rag", {"agent", "document-rag"}},
        {"document-rag", {"agent", "graph-rag"}},
        {"agent", {"graph-rag", "document-rag"}},
    };
    for (const auto& [from, nexts] : kOrder) {
        if (from != current) continue;
        for (const auto& next : nexts) {
            const bool tried = std::any_of(runs.begin(), runs.end(),
                                           [&](const EngineRun& r) { return r.engine == next; });
            if (!tried) return next;
        }
    }
    return std::nullopt;
}

// An engine's NotFound that the store confirms (the collection was never loaded) ends the
// request: no other engine can answer from a collection that does not exist, and escalating
// would hide the engine's own error behind a weak answer (issue 31). A NotFound the store does
// not confirm (a graph without documents, say) escalates as any failure does.
std::optional<base::Error> unknown_collection(runtime::RequestContext& context,
                                              const QueryConfig& config,
                                              const std::string& collection, const EngineRun& run) {
    if (!run.error || run.error->type != ErrorType::kNotFound) return std::nullopt;
    auto known =
        runtime::check_collection(context, config.store_service, collection, config.signal_timeout);
    if (known || known.error().type != ErrorType::kNotFound) return std::nullopt;
    return *run.error;
}

// Every engine is asked with min_confidence 0: it states what it found, with its calibrated
// confidence, and the router applies the floor (the request's, else query.min_confidence) once,
// to its own answer (conclude). An engine that abstained would hide its value from the
// escalation's comparison of the engines (engine_disagreement.hpp), and with the default floors
// every escalated answer (below query.confidence_threshold, 0.2) would have abstained (below the
// engines' 0.25); a floor between two engines' confidences would silence the weaker one.
json engine_body(const std::string& engine, const schema::QueryRequest& request,
                 const std::string& question, const std::string& parent,
                 const std::vector<std::string>& exclude) {
    if (engine == "graph-rag") {
        schema::GraphRagQuery q;
        q.query = question;
        if (!exclude.empty()) q.exclude = exclude;
        q.collection = request.collection;
        q.parent_uri = parent;
        q.streaming = request.streaming;
        q.min_confidence = 0.0;
        return schema::encode(q);
    }
    if (engine == "agent") {
        schema::AgentRequest q;
        q.question = question;
        q.collection = request.collection;
        q.session_id = request.session_id;
        q.parent_uri = parent;
        q.min_confidence = 0.0;
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
    q.min_confidence = 0.0;
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
    const bool yes =
        (body.is_number() && body.get<double>() == 200) || (body.is_string() && body == "200");
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
    return json{{"message_type", "chunk"},
                {"response", text},
                {"engine", engine},
                {"run", run},
                {"provisional", true}};
}

// A run's text sent again whole, no longer provisional (after a retraction).
json replay_piece(const std::string& engine, std::size_t run, const std::string& text) {
    json piece = provisional_piece(engine, run, text);
    piece["provisional"] = false;
    piece["replay"] = true;
    return piece;
}

// An engine's explain messages as they arrive (docs/query.md §2): each is read for its session,
// step and evidence triples with a cursor over the text received, and relayed to a client that
// takes explain messages as that text, no tree built (issue 35: the trees of graph-rag's
// ~380 KB a question, and their re-dump, were a third of the router's CPU). A message the scan
// does not take is parsed, and relayed as the tree's dump, as before.
class ExplainRelay {
public:
    ExplainRelay(runtime::RequestContext& context, std::string_view service)
        : context_(context), service_(service) {}

    // One explain message: its head, or the error that ends the run (a body that is not JSON,
    // or a relay that failed). `relay` false: read it only (a relay already failed).
    base::Result<ExplainHead> take(const std::string& text, bool relay) {
        relay = relay && context_.meta().client_takes_explain;
        // The triples' views point into the text kept here (the reply's goes on to the runtime).
        const std::string& kept = texts_.emplace_back(text);
        ExplainHead head;
        if (triples_.add_text(kept, head)) {
            if (relay) {
                if (auto sent = context_.send_partial_text(kept); !sent) return sent.error();
            }
            return head;
        }
        texts_.pop_back();
        auto body = schema::parse_untrusted_json(text);
        if (!body) {
            return make_error(ErrorType::kUpstreamError,
                              std::string(service_) +
                                  " answered a body that is not JSON: " + body.error().message);
        }
        const json& tree = trees_.emplace_back(std::move(body).value());
        triples_.add(tree);
        head.session = string_of(tree, "session");
        head.explain_id = string_of(tree, "explain_id");
        if (relay) {
            if (auto sent = context_.send_partial(tree); !sent) return sent.error();
        }
        return head;
    }

    // An explain body that came as a tree (the agent's tools' sub-runs, in its data).
    void add(const json& body) { triples_.add(trees_.emplace_back(body)); }

    const EvidenceTriples& triples() const noexcept { return triples_; }

private:
    runtime::RequestContext& context_;
    std::string_view service_;
    std::deque<std::string> texts_;
    std::deque<json> trees_;
    EvidenceTriples triples_;
};

// `question` is the request's, with a reference to the previous turn resolved, which the answer
// is judged against; `asked` what the engine is asked (the question, or an escalation's
// rephrasing of it); `index` is the run's number (0 the routed engine, then one per escalation).
EngineRun run_engine(runtime::RequestContext& context, const QueryConfig& config,
                     const std::string& engine, const schema::QueryRequest& request,
                     const std::string& question, const std::string& asked,
                     const std::vector<std::string>& exclude, const std::string& parent,
                     std::size_t index) {
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
    ExplainRelay relay(context, service);
    const auto on_reply = [&](const bus::Reply& reply) {
        if (reply.kind == bus::ReplyKind::kData && request.streaming && !forward_failed) {
            const std::string piece = answer_piece(reply.body);
            if (piece.empty()) return;
            if (auto sent = context.send_partial(provisional_piece(engine, index, piece)); !sent)
                forward_failed = sent.error();
            else
                run.streamed += piece;
            return;
        }
        if (reply.kind != bus::ReplyKind::kExplain) return;
        const auto head = relay.take(reply.text, !forward_failed);
        if (!head) {
            if (!forward_failed) forward_failed = head.error();
            return;
        }
        if (run.session.empty()) run.session = head->session;
        if (!head->explain_id.empty() && head->explain_id != run.session)
            run.last_step = head->explain_id;
    };
    auto called = context.call(service, engine_body(engine, request, asked, parent, exclude),
                               config.call_timeout, on_reply, runtime::FinalBody::kJson,
                               runtime::ExplainBody::kTextOnly);
    if (!called) return failed(called.error());
    if (forward_failed) return failed(*forward_failed);
    run.final = std::move(called->final);
    normalise_answer(run.final);
    if (engine == "agent" && request.streaming) {
        const std::string text = string_of(run.final, "response");
        if (!text.empty()) {
            if (auto sent = context.send_partial(provisional_piece(engine, index, text)); !sent)
                return failed(sent.error());
            run.streamed = text;
        }
    }
    if (const std::string session = string_of(run.final, "session"); !session.empty())
        run.session = session;
    if (const std::string last = string_of(run.final, "explain_id"); !last.empty())
        run.last_step = last;
    // The agent forwards its tools' sub-runs' explain messages as data ({"message_type":
    // "explain", "explain": {…}}): their kept edges and chunks are its evidence too.
    for (const auto& body : called->data) {
        if (!body.is_object() || string_of(body, "message_type") != "explain") continue;
        if (const auto inner = body.find("explain"); inner != body.end() && inner->is_object())
            relay.add(*inner);
    }
    run.evidence = read_gathered_evidence(relay.triples(), run.final);
    if (const auto c = run.final.find("confidence"); c != run.final.end() && c->is_number())
        run.confidence = std::clamp(c->get<double>(), 0.0, 1.0);
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
std::vector<text::EarlierTurn> previous_turns(runtime::RequestContext& context,
                                              const QueryConfig& config,
                                              const std::string& session_id,
                                              const std::string& current_run) {
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
    if (!called || !called->final.is_object() || !called->final.contains("turns") ||
        !called->final["turns"].is_array()) {
        base::component_logger("worker.query")
            ->warn("event=history_unavailable session=\"{}\" error=\"{}\"", session_id,
                   called ? "the reply has no turns list" : called.error().describe());
        return turns;
    }
    for (const json& turn : called->final["turns"]) {
        if (!turn.is_object()) continue;
        turns.push_back({string_of(turn, "question"), string_of(turn, "answer"),
                         string_of(turn, "short_answer")});
    }
    return turns;
}

json route_json(const RouteDecision& d) {
    json fired = json::array();
    for (const auto& r : d.fired) fired.push_back(r.name);
    json scores = json::object();
    for (const auto& [name, score] : d.scores) scores[name] = score;
    return json{
        {"engine", d.engine},   {"method", d.method},         {"question_type", d.question_type},
        {"rules_fired", fired}, {"confidence", d.confidence}, {"scores", scores}};
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
        // The engine's own calibrated confidence (the FINAL's may be lowered after: conflicts).
        if (r.confidence) item["confidence"] = *r.confidence;
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

// What a query request must be before a trace is opened: a bounded question with words, a
// request id the gateway would take, and a floor that is a probability.
std::optional<base::Error> request_problem(const schema::QueryRequest& request,
                                           const QueryConfig& config) {
    if (request.query.size() > config.max_question_bytes) {
        return make_error(ErrorType::kInvalidRequest,
                          "the question is " + std::to_string(request.query.size()) +
                              " bytes; at most " + std::to_string(config.max_question_bytes) +
                              " are accepted");
    }
    if (request.query.find_first_not_of(" \t\r\n") == std::string::npos) {
        return make_error(ErrorType::kInvalidRequest, "\"query\" must be a non-empty question");
    }
    if (!schema::has_words(request.query)) {
        return make_error(ErrorType::kInvalidRequest, "the question has no words to search for");
    }
    // The request id goes into the trace as it is, so it is checked like the gateway checks it.
    if (!request.request_id.empty() && !schema::usable_request_id(request.request_id)) {
        return make_error(ErrorType::kInvalidRequest,
                          "\"request_id\" must be 1-" + std::to_string(schema::kMaxRequestIdBytes) +
                              " printable ASCII characters without spaces");
    }
    if (request.min_confidence &&
        !(*request.min_confidence >= 0.0 && *request.min_confidence <= 1.0)) {
        return make_error(ErrorType::kInvalidRequest,
                          "\"min_confidence\" must be a number from 0 to 1");
    }
    return std::nullopt;
}

// One routed question, step by step: the Question, the routing of the question as the
// conversation reads it, the engines (the routed one, then escalations while the answer is
// weak), the winner, the Conclusion and the FINAL. Each step that fails ends the trace and the
// request (fail) and returns false.
class QueryRun {
public:
    QueryRun(runtime::RequestContext& context, const QueryConfig& config, const Router& router,
             const schema::QueryRequest& request)
        : context_(context),
          config_(config),
          router_(router),
          request_(request),
          trace_(context, config.explain),
          run_(trace_.run()) {}

    void answer() {
        if (!ask() || !route() || !run_engines()) return;
        const auto winner = pick_winner();
        if (!winner || !replay_winner(*winner)) return;
        conclude(*winner);
    }

private:
    bool fail(const base::Error& error) {
        trace_.fail(error);
        return false;
    }
    bool sent(const base::Result<void>& result) { return result ? true : fail(result.error()); }

    // The Question: a top-level run (the query worker is always one) records its conversation
    // (issue 18) and the collection it asks.
    bool ask() {
        std::optional<std::string_view> conversation;
        if (!request_.session_id.empty()) conversation = request_.session_id;
        const std::string_view collection = request_.collection.empty()
                                                ? schema::kDefaultCollection
                                                : std::string_view{request_.collection};
        return sent(
            trace_.send(trace_.session(),
                        explain::question(run_, request_.query, std::chrono::system_clock::now(),
                                          explain::worker_agent_uri(schema::services::kQuery),
                                          std::nullopt, conversation, request_.request_id,
                                          collection, request_.revision_of.value_or(""))));
    }

    // Routing, of the question with a follow-up's reference to the previous turn resolved and
    // what an "else" leaves out.
    bool route() {
        const auto started = SteadyClock::now();
        const auto turns = previous_turns(context_, config_, request_.session_id, run_.uuid());
        resolved_ = text::resolve_reference(request_.query, turns);
        excluded_ = text::already_answered(request_.query, turns, resolved_);
        decision_ = decide();
        explain::Routing routing{
            decision_.method, {}, decision_.confidence, decision_.engine, decision_.scores};
        for (const auto& r : decision_.fired) routing.rules_fired.push_back(r.name);
        routing.question_type = decision_.question_type;
        if (resolved_.resolved()) {
            routing.resolved_question = resolved_.question;
            routing.resolved_reference =
                resolved_.reference + " -> " + resolved_.entity + " (" + resolved_.rule + ")";
        }
        routing.excluded = excluded_.entities;
        return sent(trace_.send(run_.routing_decision(),
                                explain::routing_decision(run_, step_info(started, ""), routing)));
    }

    RouteDecision decide() {
        RouteDecision decision;
        if (request_.mode != schema::QueryMode::kAuto) {
            decision.engine = std::string(schema::to_string(request_.mode));
            decision.method = "explicit";
            decision.confidence = 1.0;
            return decision;
        }
        QuestionFeatures features = question_features(resolved_.question);
        // The store is asked only when its answer can change the decision: a store round trip
        // before the engine starts, on the router's own time (issue 35, its p50 overhead).
        if (config_.collection_signals && router_.signals_can_decide(features)) {
            const auto why = ask_collection(context_, config_.store_service, request_.collection,
                                            config_.signal_timeout, features);
            if (!why.empty())
                base::component_logger("worker.query")->debug("event=query_signals {}", why);
        }
        return router_.route(features);
    }

    // The routed engine, then the next while the answer is weak, failed, and there is one.
    bool run_engines() {
        parent_ = run_.routing_decision();
        std::string engine = decision_.engine;
        std::string asked =
            resolved_.question;  // an escalation may ask the next engine a rephrasing
        for (;;) {
            if (context_.cancelled()) return fail(context_.cancellation_error());
            runs_.push_back(run_engine(context_, config_, engine, request_, resolved_.question,
                                       asked, excluded_.entities, parent_, runs_.size()));
            const EngineRun& last = runs_.back();
            if (!last.error && !weak(last)) return true;
            if (auto unknown = unknown_collection(context_, config_, request_.collection, last))
                return fail(*unknown);
            if (runs_.size() > config_.max_escalations) return true;
            const auto next = next_engine(engine, runs_);
            if (!next) return true;
            if (!escalate(engine, *next, asked)) return false;
            engine = *next;
        }
    }

    // Whether the calibrated confidence judges `run`: it has one, and no model judged it (a
    // model's judgement, configured with reflection = llm, is the operator's choice and wins).
    static bool calibrated(const EngineRun& run) {
        return run.confidence && run.reflection.method != "llm";
    }

    // An answer to escalate past: its calibrated confidence below confidence_threshold, or,
    // judged by relevance, its relevance below relevance_threshold.
    bool weak(const EngineRun& run) const {
        return calibrated(run) ? *run.confidence < config_.confidence_threshold
                               : run.relevance.score < config_.relevance_threshold;
    }

    // Whether `a` is the better answer: by calibrated confidence when both have one, else by
    // relevance (a probability and a coverage score are not on one scale).
    static bool better(const EngineRun& a, const EngineRun& b) {
        if (calibrated(a) && calibrated(b)) return *a.confidence > *b.confidence;
        return a.relevance.score > b.relevance.score;
    }

    // The Escalation from `engine` to `next`: its step, its record for the FINAL, the retraction
    // of the text streamed for the weak run; `asked` becomes what the next engine is asked.
    bool escalate(const std::string& engine, const std::string& next, std::string& asked) {
        const auto started = SteadyClock::now();
        const EngineRun& last = runs_.back();
        const std::size_t n = runs_.size() - 1;
        const std::string reason =
            last.error ? "engine failed: " + last.relevance.reason
            : calibrated(last)
                ? "confidence " + std::to_string(*last.confidence).substr(0, 4) + " below " +
                      std::to_string(config_.confidence_threshold).substr(0, 4) + " (calibrated)"
                : "relevance below " + std::to_string(config_.relevance_threshold).substr(0, 4) +
                      " (" + last.relevance.reason + ")";
        explain::EscalationInfo info{reason, last.relevance.score, next, engine, last.reflection};
        asked = rephrased(engine, reason, info);
        const std::string derived = last.last_step.empty() ? parent_ : last.last_step;
        if (!sent(trace_.send(run_.escalation(n),
                              explain::escalation(run_, n, step_info(started, derived), info))))
            return false;
        json escalated{{"from", engine},
                       {"to", next},
                       {"reason", reason},
                       {"relevance", last.relevance.score},
                       {"reflection", last.reflection.method}};
        if (!info.rephrased_question.empty()) escalated["query"] = info.rephrased_question;
        if (!info.rephrase_fallback.empty())
            escalated["rephrase_fallback"] = info.rephrase_fallback;
        escalations_.push_back(std::move(escalated));
        // The text streamed for this run is not the answer (yet): the reader drops it.
        if (request_.streaming && !sent(context_.send_partial(json{{"message_type", "retract"},
                                                                   {"engine", engine},
                                                                   {"run", n},
                                                                   {"reason", reason}}))) {
            return false;
        }
        parent_ = run_.escalation(n);
        return true;
    }

    // With a model to ask, the next engine gets a question reworded for it (the trace's question
    // stays the one asked); without, or when that fails, the question itself.
    std::string rephrased(const std::string& engine, const std::string& reason,
                          explain::EscalationInfo& info) {
        if (config_.reflection != "llm") return resolved_.question;
        const auto rephrasing =
            rephrase_for_escalation(context_, config_, resolved_.question, engine, reason);
        if (!rephrasing.rephrased) {
            info.rephrase_fallback = rephrasing.fallback;
            return resolved_.question;
        }
        info.rephrased_question = rephrasing.question;
        return rephrasing.question;
    }

    // The best answer wins (the earliest on a tie); failed runs never do. None: the request fails.
    std::optional<std::size_t> pick_winner() {
        std::optional<std::size_t> winner;
        for (std::size_t i = 0; i < runs_.size(); ++i) {
            if (runs_[i].error) continue;
            if (!winner || better(runs_[i], runs_[*winner])) winner = i;
        }
        if (!winner) {
            const base::Error& error = *runs_.back().error;
            fail(make_error(error.type, runs_.size() == 1
                                            ? error.message
                                            : "every engine failed; the last: " + error.message));
        }
        return winner;
    }

    // A retracted run won after all (the engines escalated to did worse): the last run's text is
    // retracted too, and the winner's sent again, whole.
    bool replay_winner(std::size_t winner) {
        if (!request_.streaming || winner + 1 >= runs_.size()) return true;
        if (!sent(context_.send_partial(json{{"message_type", "retract"},
                                             {"engine", runs_.back().engine},
                                             {"run", runs_.size() - 1},
                                             {"reason", "an earlier run answered better"}})))
            return false;
        const EngineRun& won = runs_[winner];
        return sent(context_.send_partial(
            replay_piece(won.engine, winner, string_of(won.final, "response"))));
    }

    // The Conclusion (with the winner's reflection and the trace's end), then the FINAL. After an
    // escalation, another engine's short answer that disagrees with the winner's is a conflict
    // between the engines (engine_disagreement.hpp): in the answer, its confidence and the
    // Conclusion. Below the floor (the request's, else query.min_confidence) the answer then
    // abstains (router_abstention.hpp), its short answer "" as an engine's is.
    void conclude(std::size_t winner) {
        const EngineRun& won = runs_[winner];
        const auto provenance = answer_provenance(decision_, runs_, winner);
        const auto started = SteadyClock::now();
        json body = final_body(won, provenance);
        const std::size_t own_citations = body.contains("citations") && body["citations"].is_array()
                                              ? body["citations"].size()
                                              : 0;
        auto confidence = add_engine_conflicts(body, engine_conflicts(runs_, winner));
        const bool abstained =
            confidence &&
            abstain_below_floor(body, *confidence, min_confidence(), won.confidence, own_citations);
        auto triples = explain::routed_conclusion(
            run_, step_info(started, won.last_step.empty() ? parent_ : won.last_step),
            explain::StoredText{string_of(body, "response"), std::nullopt}, provenance,
            abstained ? std::optional<std::string>("") : won.evidence.short_answer);
        const auto reflected = explain::reflection(run_.conclusion(), won.reflection);
        triples.insert(triples.end(), reflected.begin(), reflected.end());
        // The winner's confidence, on the concluding step of the whole run too, with the
        // conflicts its answer reported and the engines' (gb:Conflict, docs/confidence.md §6).
        if (confidence) {
            const auto stated = explain::conclusion_confidence(run_, *confidence);
            triples.insert(triples.end(), stated.begin(), stated.end());
        }
        const auto end = explain::trace_end(run_, std::chrono::system_clock::now(),
                                            schema::TraceStatus::kComplete);
        triples.insert(triples.end(), end.begin(), end.end());
        if (!sent(trace_.send(run_.conclusion(), std::move(triples),
                              runtime::ExplainState::kComplete)))
            return;
        if (!restate(body, winner, abstained)) return;
        (void)context_.reply(body);
    }

    // While streaming, the client holds the winning engine's text: its streamed pieces, or its
    // FINAL's text when replayed. When the router's answer differs from it (the engines'
    // disagreement added, the router's abstention, or an engine whose FINAL rewrote what it
    // streamed), that text is retracted and the router's sent whole, so the pieces after the
    // last retraction are the answer (docs/query.md §1).
    bool restate(const json& body, std::size_t winner, bool abstained) {
        const std::string response = string_of(body, "response");
        const bool replayed = winner + 1 < runs_.size();
        const std::string held =
            replayed ? string_of(runs_[winner].final, "response") : runs_[winner].streamed;
        // Nothing streamed (an engine that sends its text only in its FINAL): nothing to take back.
        if (!request_.streaming || held.empty() || response == held) return true;
        if (!sent(context_.send_partial(
                json{{"message_type", "retract"},
                     {"engine", runs_[winner].engine},
                     {"run", winner},
                     {"reason", abstained ? "its confidence is below the floor asked for"
                                : response != string_of(runs_[winner].final, "response")
                                    ? "the engines disagree on it"
                                    : "the engine's final answer differs from what it streamed"}})))
            return false;
        return sent(context_.send_partial(replay_piece(runs_[winner].engine, winner, response)));
    }

    // The floor of the router's answer: the request's, else the worker's.
    double min_confidence() const {
        return request_.min_confidence.value_or(config_.min_confidence);
    }

    json final_body(const EngineRun& won, const explain::AnswerProvenance& provenance) {
        json body = won.final.is_object() ? won.final : json::object();
        body["message_type"] = "chunk";
        body["end_of_stream"] = true;
        body["end_of_session"] = true;
        body["in_token"] = token_sum(runs_, "in_token");
        body["out_token"] = token_sum(runs_, "out_token");
        body["session"] = trace_.session();
        body["explain_id"] = run_.conclusion();
        body["engine"] = won.engine;
        body["engine_session"] = won.session;
        body["route"] = route_json(decision_);
        if (resolved_.resolved()) {
            body["resolved_question"] = resolved_.question;
            body["resolved_reference"] = {{"reference", resolved_.reference},
                                          {"entity", resolved_.entity},
                                          {"rule", resolved_.rule}};
        }
        body["relevance"] = won.relevance.score;
        body["runs"] = runs_json(runs_, resolved_.question);
        body["escalations"] = std::move(escalations_);
        body["provenance"] = provenance_json(provenance);
        return body;
    }

    runtime::RequestContext& context_;
    const QueryConfig& config_;
    const Router& router_;
    const schema::QueryRequest& request_;
    QueryTrace trace_;
    const explain::RunUris& run_;
    text::ResolvedReference resolved_;
    text::Exclusion excluded_;
    RouteDecision decision_;
    std::vector<EngineRun> runs_;
    json escalations_ = json::array();
    std::string parent_;  // the step the next engine is called from
};

void handle_query(runtime::RequestContext& context, const QueryConfig& config,
                  const Router& router) {
    auto decoded = schema::decode<schema::QueryRequest>(context.body());
    if (!decoded) {
        (void)context.fail(decoded.error());
        return;
    }
    if (auto problem = request_problem(*decoded, config)) {
        (void)context.fail(*problem);
        return;
    }
    QueryRun(context, config, router, *decoded).answer();
}

}  // namespace

runtime::Handler make_query_handler(QueryConfig config) {
    // Shared by the handler's threads, read-only after construction (the compiled rules and the
    // classifier's example vectors are built once).
    auto router = std::make_shared<const Router>(config.rules);
    auto shared = std::make_shared<const QueryConfig>(std::move(config));
    return [router, shared](runtime::RequestContext& context) {
        handle_query(context, *shared, *router);
    };
}

}  // namespace glassbox::query
