// The agent's ReAct loop.
#include "workers/agent/agent_service.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <set>

#include "base/log.hpp"
#include "reasoner/stated_confidence.hpp"
#include "schema/collection_name.hpp"
#include "schema/freshness.hpp"
#include "schema/messages_trace.hpp"
#include "text/tokenize.hpp"
#include "workers/agent/agent_tools.hpp"
#include "workers/agent/agent_trace.hpp"
#include "workers/agent/answer_conflicts.hpp"
#include "workers/agent/answer_evidence.hpp"
#include "workers/agent/answer_features.hpp"
#include "workers/agent/react_reply.hpp"
#include "workers/runtime/collection_check.hpp"

namespace glassbox::agent {

namespace explain = schema::explain;
using base::ErrorType;
using base::make_error;
using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

namespace {

std::chrono::milliseconds since(SteadyClock::time_point start) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start);
}

std::string dump_text(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A deadline closer than this (or than the last iteration took) ends the loop with the best
// answer so far, before the broker would cut the run off without one.
constexpr std::chrono::milliseconds kDeadlineMargin{200};

// A RAG tool's short answer (a document tool's, or graph-rag's through knowledge-query), kept to
// compare the facts with the documents.
struct PassageAnswer {
    std::string question;  // what the tool was asked
    std::string answer;
    std::vector<std::string> answer_selections;
    std::vector<schema::RagCitation> citations;
    std::size_t iteration = 0;
    std::optional<double> confidence;                  // the tool's calibrated confidence, if any
    std::vector<explain::AnswerConflict> conflicts{};  // those the tool's answer reported
};

// A RAG tool's answer text with the citations its spans belong to, to mark it again when the
// agent passes it on (with_tool_markers).
struct ToolText {
    std::string response;
    std::vector<schema::RagCitation> citations;
};

// `text`'s lines trimmed, without the empty ones: what the model's reply keeps of a text it
// passes on (parse_react_reply reads a multi-line field so).
std::string kept_lines(std::string_view text) {
    std::string out;
    std::size_t start = 0;
    while (start < text.size()) {
        const auto end = std::min(text.find('\n', start), text.size());
        auto line = text.substr(start, end - start);
        start = end + 1;
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front())))
            line.remove_prefix(1);
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())))
            line.remove_suffix(1);
        if (line.empty()) continue;
        if (!out.empty()) out.push_back('\n');
        out.append(line);
    }
    return out;
}

// The "question" a tool call was given ("" when none).
std::string question_arg(const json& args) {
    if (!args.is_object()) return {};
    const auto it = args.find("question");
    return it != args.end() && it->is_string() ? it->get<std::string>() : std::string();
}

class AgentRun {
public:
    AgentRun(runtime::RequestContext& context, const AgentConfig& config,
             const std::vector<Tool>& tools)
        : context_(context), config_(config), all_tools_(tools), trace_(context, config.explain) {}

    void run() {
        auto decoded = schema::decode<schema::AgentRequest>(context_.body());
        if (!decoded) return (void)context_.fail(decoded.error());
        auto resolved = resolve_agent_request(*decoded, config_, all_tools_);
        if (!resolved) return (void)context_.fail(resolved.error());
        request_ = std::move(resolved->request);
        tools_ = std::move(resolved->tools);
        if (auto opened = trace_.open(request_.question, request_.parent_uri, request_.session_id,
                                      recorded_collection(), request_.revision_of.value_or(""));
            !opened)
            return trace_.fail(opened.error());
        // A collection never loaded is the store's NotFound, as graph-rag and document-rag
        // answer it, not a run of lookups that all come back empty (issue 31).
        if (auto known = runtime::check_collection(context_, config_.store_service,
                                                   request_.collection, config_.call_timeout);
            !known && known.error().type == ErrorType::kNotFound)
            return trace_.fail(known.error());
        const auto ended = loop();
        if (!ended) trace_.fail(ended.error());
    }

private:
    base::Result<void> loop() {
        const json history = fetch_history();
        const json tools_json = tools_for_model(tools_);
        std::vector<std::string> candidates;
        for (const auto& t : tools_) candidates.push_back(t.name);
        ToolRunner runner(context_, config_, request_.collection);
        json steps = json::array();
        std::chrono::milliseconds last_iteration{0};
        for (std::size_t n = 0; n < request_.max_iterations; ++n) {
            if (context_.cancelled()) return context_.cancellation_error();
            if (context_.remaining() < std::max(kDeadlineMargin, last_iteration))
                return finish(kDeadline, std::nullopt);
            const auto started = SteadyClock::now();
            trace_.reached("analysis " + std::to_string(n));
            auto reply = ask_model(tools_json, steps, history);
            if (!reply) {
                if (context_.cancelled()) return context_.cancellation_error();
                return finish(kError, reply.error());
            }
            explain::StepInfo llm_info = step_info(since(started));
            llm_info.model = reply->model;
            llm_info.input_tokens = reply->in_token;
            llm_info.output_tokens = reply->out_token;
            model_ = reply->model;
            in_tokens_ += reply->in_token;
            out_tokens_ += reply->out_token;

            auto parsed = parse_react_reply(reply->text);
            json step = {{"iteration", n}};
            explain::AgentAction action;
            action.candidates = candidates;
            if (n == 0 && !history_note_.empty()) action.thought = history_note_ + " ";
            if (!parsed) {
                action.thought +=
                    "(the model's reply did not parse) " + reply->text.substr(0, 2'000);
                step["reply"] = reply->text.substr(0, 2'000);
                step["calls"] = json::array();
                step["error"] = parsed.error().message;
                if (auto sent = trace_.analysis(n, llm_info, std::move(action)); !sent) return sent;
                partial({{"message_type", "observation"},
                         {"iteration", n},
                         {"error", true},
                         {"content", parsed.error().message}});
                if (auto sent = trace_.observation(n, step_info({}, trace_.run().analysis(n)),
                                                   "error: " + parsed.error().message, {true, {}});
                    !sent)
                    return sent;
                steps.push_back(std::move(step));
                last_iteration = since(started);
                continue;
            }
            action.thought += parsed->thought;
            step["thought"] = parsed->thought;
            partial({{"message_type", "thought"}, {"iteration", n}, {"content", parsed->thought}});
            if (parsed->final_answer) {
                if (auto sent = trace_.analysis(n, llm_info, std::move(action)); !sent) return sent;
                iterations_ = n + 1;
                answer_ = *parsed->final_answer;
                response_ = parsed->response.empty() ? *parsed->final_answer : parsed->response;
                return finish(kFinalAnswer, std::nullopt);
            }
            if (auto r = iterate(n, *parsed, llm_info, std::move(action), step); !r) return r;
            steps.push_back(std::move(step));
            iterations_ = n + 1;
            last_iteration = since(started);
        }
        return finish(kMaxIterations, std::nullopt);
    }

    // Runs the iteration's tool calls and records the Analysis and the Observation.
    base::Result<void> iterate(std::size_t n, const ReactReply& reply,
                               const explain::StepInfo& llm_info, explain::AgentAction action,
                               json& step) {
        std::vector<ToolCall> calls = reply.calls;
        const bool too_many = calls.size() > config_.max_calls_per_iteration;
        if (too_many) calls.resize(config_.max_calls_per_iteration);
        action.action = calls.front().tool;
        json all_args = json::array();
        for (std::size_t k = 0; k < calls.size(); ++k) {
            if (k > 0) action.more_actions.push_back(calls[k].tool);
            all_args.push_back({{"tool", calls[k].tool}, {"args", calls[k].args}});
            partial({{"message_type", "action"},
                     {"iteration", n},
                     {"tool", calls[k].tool},
                     {"args", calls[k].args}});
        }
        action.arguments = dump_text(calls.size() == 1 ? calls.front().args : all_args);
        const std::string analysis_uri = trace_.run().analysis(n);
        if (auto sent = trace_.analysis(n, llm_info, std::move(action)); !sent) return sent;

        const auto started = SteadyClock::now();
        trace_.reached("tool call " + std::to_string(n) + " (" + calls.front().tool + ")");
        auto outcomes =
            ToolRunner(context_, config_, request_.collection).run(calls, tools_, analysis_uri);
        const auto tool_time = since(started);
        if (context_.cancelled()) return context_.cancellation_error();

        explain::ObservationInfo details;
        std::string text;
        json step_calls = json::array();
        bool documents_only = true;
        for (auto& out : outcomes) {
            documents_only =
                documents_only && !out.error && kind_of(out.tool) == ToolKind::kDocumentRag;
            // Its tools' steps, for a client that takes explain messages (not explain=none).
            if (context_.meta().client_takes_explain) {
                for (auto& body : out.explain)
                    partial({{"message_type", "explain"},
                             {"iteration", n},
                             {"tool", out.tool},
                             {"explain", std::move(body)}});
            }
            partial({{"message_type", "observation"},
                     {"iteration", n},
                     {"tool", out.tool},
                     {"error", out.error},
                     {"content", out.observation}});
            details.error = details.error || out.error;
            if (!out.sub_run_last_step.empty())
                details.sub_run_steps.push_back(out.sub_run_last_step);
            if (!text.empty()) text += "\n";
            if (outcomes.size() > 1) text += out.tool + ": ";
            text += out.observation;
            step_calls.push_back({{"tool", out.tool},
                                  {"args", out.args},
                                  {"observation", out.observation},
                                  {"error", out.error}});
            count_outcome(out);
            remember(out, n);
        }
        if (documents_only) document_iterations_.push_back(n);
        if (too_many) {
            const std::string note = "error: only the first " +
                                     std::to_string(config_.max_calls_per_iteration) +
                                     " tool calls of an iteration run";
            text += "\n" + note;
            details.error = true;
            step["error"] = note;
        }
        step["calls"] = std::move(step_calls);
        return trace_.observation(n, step_info(tool_time, analysis_uri), std::move(text),
                                  std::move(details));
    }

    // The kind of the run's tool named `tool` (nullopt: not one of them).
    std::optional<ToolKind> kind_of(const std::string& tool) const {
        const auto it = std::find_if(tools_.begin(), tools_.end(),
                                     [&](const Tool& t) { return t.name == tool; });
        if (it == tools_.end()) return std::nullopt;
        return it->kind;
    }

    // How the run's tool calls went, for the answer's evidence features.
    void count_outcome(const ToolOutcome& out) {
        const auto kind_is = [&](ToolKind kind) { return kind_of(out.tool) == kind; };
        // A graph-query attempt that failed is refined and asked again (at most three times):
        // the attempt is in the trace, the answer's evidence is the query that gave rows.
        if (kind_is(ToolKind::kGraphQuery)) return;
        const bool lookup = kind_is(ToolKind::kTriples);
        if (out.error) ++(lookup ? empty_lookups_ : tool_errors_);
    }

    // The best answer so far: a RAG tool's short answer, else the last observation that is not
    // an error (for max-iterations and deadline).
    void remember(const ToolOutcome& out, std::size_t iteration) {
        if (out.error) return;
        for (const auto& s : out.sources)
            if (std::find(sources_.begin(), sources_.end(), s) == sources_.end())
                sources_.push_back(s);
        for (const auto& c : out.citations) citations_.push_back(c);
        if (!out.response.empty() && !out.citations.empty())
            tool_texts_.push_back({out.response, out.citations});
        // The facts of the latest query's rows back the answer given from them; any other tool
        // that answers after it takes over.
        query_facts_.clear();
        for (const auto& f : out.facts) {
            if (f.query && query_facts_.size() < kMaxAnswerFacts)
                query_facts_.push_back(facts_.size());
            facts_.push_back(StepFact{f, iteration});
        }
        if (std::find(tools_used_.begin(), tools_used_.end(), out.tool) == tools_used_.end())
            tools_used_.push_back(out.tool);
        if (out.answer && !out.answer->empty()) {
            // Kept to compare the facts with the documents (conflicts_with_documents).
            PassageAnswer said{question_arg(out.args), *out.answer, out.answer_selections,
                               out.citations,          iteration,   out.confidence,
                               out.conflicts};
            if (kind_of(out.tool) == ToolKind::kDocumentRag) passages_.push_back(said);
            if (kind_of(out.tool) == ToolKind::kGraphRag) graph_answers_.push_back(std::move(said));
            best_answer_ = *out.answer;
            best_response_ = out.response;
            best_confidence_ = out.confidence;
        } else if (best_answer_.empty()) {
            best_response_ = out.response.empty() ? out.observation : out.response;
        }
    }

    base::Result<schema::LlmResponse> ask_model(const json& tools, const json& steps,
                                                const json& history) {
        schema::LlmRequest request;
        request.template_name = config_.react_template;
        request.variables = {{"question", request_.question},
                             {"tools", dump_text(tools)},
                             {"steps", dump_text(steps)},
                             {"history", dump_text(history)}};
        auto called =
            context_.call(config_.llm_service, schema::encode(request), config_.call_timeout);
        if (!called) return std::move(called).error();
        auto response = schema::decode<schema::LlmResponse>(called->final);
        if (!response)
            return make_error(ErrorType::kUpstreamError,
                              config_.llm_service + " answered a reply that does not decode: " +
                                  response.error().message);
        return response;
    }

    // The collection the trace records: the request's when the store could hold such a name.
    std::string recorded_collection() const {
        auto named = schema::validate_collection(request_.collection);
        return named ? std::move(named).value() : std::string();
    }

    // The UUID of the run this request is part of at the top: the caller's when it is a sub-run.
    std::string top_level_run() const {
        if (request_.parent_uri) {
            if (auto parent = schema::explain::RunUris::from_uri(*request_.parent_uri))
                return parent->uuid();
        }
        return trace_.run().uuid();
    }

    // Earlier turns of the conversation (contract: `turns` of the trace service, oldest first).
    json fetch_history() {
        json history = json::array();
        if (request_.session_id.empty()) return history;
        // The previous turn may still be reaching the store: the trace service waits for the
        // conversation's runs but this request's own (the caller's, when the router asked).
        const json body = {{"op", "turns"},
                           {"session_id", request_.session_id},
                           {"limit", config_.history_turns},
                           {"settle_ms", schema::turns_settle_ms(config_.history_timeout)},
                           {"current", top_level_run()}};
        auto called = context_.call(config_.trace_service, body, config_.history_timeout);
        if (!called || !called->final.is_object() || !called->final.contains("turns") ||
            !called->final["turns"].is_array()) {
            const std::string why =
                called ? "the reply has no turns list" : called.error().describe();
            base::component_logger("agent")->warn(
                "event=history_unavailable session=\"{}\" error=\"{}\"", request_.session_id, why);
            history_note_ = "(The earlier turns of conversation " + request_.session_id +
                            " could not be fetched: " + why + "; going on without them.)";
            return history;
        }
        for (const json& turn : called->final["turns"]) {
            if (!turn.is_object()) continue;
            history.push_back({{"question", turn.value("question", json(""))},
                               {"answer", turn.value("answer", json(""))},
                               {"short_answer", turn.value("short_answer", json(nullptr))},
                               {"trace", turn.value("trace", json(""))}});
        }
        return history;
    }

    explain::StepInfo step_info(std::chrono::milliseconds duration,
                                std::string derived = {}) const {
        explain::StepInfo info;
        info.generated_at = std::chrono::system_clock::now();
        if (derived.empty()) derived = trace_.last_step();
        if (!derived.empty()) info.derived_from = std::move(derived);
        info.duration = duration;
        return info;
    }

    void partial(const json& body) {
        if (!request_.streaming) return;
        (void)context_.send_partial(body);
    }

    // The Conclusion, the end of the trace and the FINAL (or the ERROR, with `error`).
    base::Result<void> finish(std::string_view termination,
                              const std::optional<base::Error>& error) {
        if (termination != kFinalAnswer) {
            answer_ = best_answer_;
            response_ = best_response_;
            if (response_.empty())
                response_ = termination == kError
                                ? "The agent stopped: " + error->describe()
                                : "The agent stopped (" + std::string(termination) +
                                      ") before it found an answer.";
        }
        AnswerEvidence evidence;
        std::optional<explain::AnswerProvenance> provenance;
        std::optional<explain::AnswerConfidence> confidence;
        if (!error) {
            const auto behind = !query_facts_.empty() && !answer_.empty()
                                    ? query_facts_
                                    : facts_behind(answer_, facts_);
            evidence = rested_on(behind);
            confidence =
                assess(termination, behind, evidence,
                       with_carried_over(conflicts_with_documents(behind, evidence), evidence));
            const auto left_out = rival_citations(*confidence, evidence);
            // A tool's text passed on is given as the tool wrote it, which its spans count in.
            const auto* passed = passed_on(response_);
            response_ = passed != nullptr
                            ? with_tool_markers(passed->response, passed->citations,
                                                evidence.citations, left_out)
                            : with_citation_markers(std::move(response_), evidence.citations.size(),
                                                    left_out);
            response_ += notes(*confidence, evidence);
            provenance =
                explain::AnswerProvenance{derivation(), 0, "agent", evidence.answer_sources};
            provenance->aggregate_tier = explain::aggregate_tier(provenance->sources);
        }
        auto concluded = trace_.conclude(
            step_info({}), response_, std::string(termination),
            termination == kError ? std::nullopt : std::optional<std::string>(answer_), error,
            std::move(provenance), confidence);
        if (error) {
            (void)context_.fail(*error);
            return {};
        }
        if (!concluded) return concluded;
        partial({{"message_type", "answer"}, {"response", response_}});
        schema::RagResponse final;
        final.response = response_;
        final.answer = answer_;
        final.model = model_;
        final.in_token = in_tokens_;
        final.out_token = out_tokens_;
        final.sources = std::move(evidence.sources);
        final.citations = std::move(evidence.citations);
        final.end_of_stream = true;
        final.end_of_session = true;
        json body = schema::encode(final);
        body["session"] = trace_.session();
        body["termination"] = termination;
        body["iterations"] = iterations_;
        if (confidence) reasoner::add_confidence_fields(body, *confidence);
        return context_.reply(body);
    }

    // The answer's confidence: its evidence features scored by the agent's calibrator; below the
    // request's floor (else the worker's) the answer abstains (abstain()).
    // `conflicts` lower it before the floor is applied (as a RAG engine's do).
    explain::AnswerConfidence assess(std::string_view termination,
                                     const std::vector<std::size_t>& behind,
                                     const AnswerEvidence& evidence,
                                     std::vector<explain::AnswerConflict> conflicts) {
        AgentRunEvidence run;
        run.question = request_.question;
        run.answer = answer_;
        run.final_answer = termination == kFinalAnswer;
        run.iterations = iterations_ - checks_after(behind);
        run.facts = facts_;
        run.behind = behind;
        run.empty_lookups = empty_lookups_;
        run.tool_errors = tool_errors_;
        run.rag_answer =
            !best_answer_.empty() && normalise_name(answer_) == normalise_name(best_answer_);
        run.rag_confidence = best_confidence_;
        // A knowledge-query answer checked against the documents afterwards is still that
        // tool's answer (the check's document answer came later).
        if (const auto* graph = graph_answer_given(behind); graph != nullptr && !run.rag_answer) {
            run.rag_answer = true;
            run.rag_confidence = graph->confidence;
        }
        auto confidence = reasoner::stated_confidence(agent_features(run, evidence), "agent");
        confidence.conflicts = std::move(conflicts);
        reasoner::lower_for_conflicts(confidence);
        const double floor = request_.min_confidence.value_or(config_.min_confidence);
        if (reasoner::below_floor(confidence, floor)) abstain(confidence, floor);
        return confidence;
    }

    // The answer as it is given below its floor (docs/confidence.md): it says it does not know,
    // what the evidence points to and why it is unsure, then what was found; no short answer.
    void abstain(explain::AnswerConfidence& confidence, double floor) {
        const auto worst = reasoner::most_lowering_feature(confidence);
        const std::string note = reasoner::abstention_note(
            confidence, floor, answer_,
            worst ? reasoner::doubt_words("agent", *worst) : "its evidence is weak");
        response_ =
            response_.empty() ? note : note + std::string(reasoner::kWhatWasFound) + response_;
        answer_.clear();
        confidence.abstained = true;
    }

    // Iterations that only asked the documents after the last lookup the answer's facts come
    // from: checks of a found value (the planner's), not steps toward it, so the `iterations`
    // feature does not count them.
    std::size_t checks_after(const std::vector<std::size_t>& behind) const {
        std::size_t last = 0;
        if (const auto* graph = graph_answer_given(behind)) {
            last = graph->iteration;
        } else if (behind.empty()) {
            return 0;
        }
        for (const auto i : behind) last = std::max(last, facts_[i].iteration);
        return static_cast<std::size_t>(std::count_if(document_iterations_.begin(),
                                                      document_iterations_.end(),
                                                      [&](std::size_t n) { return n > last; }));
    }

    // The RAG tool's answer text that `response` is, passed on whole (the latest, as the model's
    // reply kept it: its lines, without the empty ones); nullptr when it is the agent's own
    // words, or a tool's text shortened or added to.
    const ToolText* passed_on(const std::string& response) const {
        const std::string lines = kept_lines(response);
        for (auto it = tool_texts_.rbegin(); it != tool_texts_.rend(); ++it)
            if (kept_lines(it->response) == lines) return &*it;
        return nullptr;
    }

    // The knowledge-query answer the agent's answer is (the latest that names it), when no
    // looked-up fact is behind it; nullptr otherwise.
    const PassageAnswer* graph_answer_given(const std::vector<std::size_t>& behind) const {
        if (!behind.empty() || answer_.empty()) return nullptr;
        for (auto it = graph_answers_.rbegin(); it != graph_answers_.rend(); ++it)
            if (normalise_name(it->answer) == normalise_name(answer_)) return &*it;
        return nullptr;
    }

    // A fact against a document's answer to the same question (answer_conflicts.hpp). The facts:
    // the looked-up ones behind the answer that give its value, when their subject has that one
    // value by that predicate among everything looked up (two values by one predicate make a
    // list, not a dispute); and each knowledge-query answer to the run's own question that is
    // one fact's end (graph_value). The passages: each document tool's short answer to the
    // run's own question, cited by the passages it came from.
    std::vector<explain::AnswerConflict> conflicts_with_documents(
        const std::vector<std::size_t>& behind, const AnswerEvidence& evidence) const {
        if (answer_.empty() || passages_.empty()) return {};
        std::vector<EvidenceValue> facts;
        for (std::size_t k = 0; k < behind.size() && k < evidence.citations.size(); ++k) {
            const auto& f = facts_[behind[k]].fact;
            if (f.query || !f.triple.s.is_iri() || f.entity != f.triple.s.as_iri().value ||
                text::normalize(f.other_label) != text::normalize(answer_) || !single_valued(f))
                continue;
            const auto& cited = evidence.citations[k];
            facts.push_back({f.subject_label,
                             f.predicate_label,
                             f.other_label,
                             trace_.run().observation(facts_[behind[k]].iteration),
                             {cited_source(cited)},
                             cited.n});
        }
        const std::string question = text::normalize(request_.question);
        for (const auto& g : graph_answers_) {
            if (text::normalize(g.question) != question) continue;
            if (auto value = graph_value(g, evidence)) facts.push_back(std::move(*value));
        }
        std::vector<EvidenceValue> passages;
        for (const auto& p : passages_) {
            if (text::normalize(p.question) != question) continue;
            if (auto value = passage_value(p, evidence)) passages.push_back(std::move(*value));
        }
        // A name fact is checked against the passages' sentences too: a document tool's short
        // answer is often another name of the passage, not its answer to this fact.
        for (const auto& fact : facts) {
            for (const auto& p : passages_) {
                for (auto value : disputing_sentences(fact, p.citations)) {
                    for (const auto& c : evidence.citations)
                        if (!c.selection.empty() && c.selection == value.selection)
                            value.citation = c.n;
                    passages.push_back(std::move(value));
                }
            }
        }
        auto found = fact_passage_conflicts(answer_, facts, passages);
        if (found.size() > 1) found.resize(1);  // one dispute said once, however many passages
        return found;
    }

    // `found` and then the conflicts a RAG tool reported among its own sources (graph-rag among
    // its facts, document-rag among its chunks) when the agent's answer is that tool's answer:
    // each numbered by the agent's citation of the selection that kept its value, so the note
    // cites both; a pair `found` already has (either way round) is not said twice.
    std::vector<explain::AnswerConflict> with_carried_over(
        std::vector<explain::AnswerConflict> found, const AnswerEvidence& evidence) const {
        if (answer_.empty()) return found;
        const auto number = [&](const std::string& selection) -> std::uint32_t {
            for (const auto& c : evidence.citations)
                if (!selection.empty() && c.selection == selection) return c.n;
            return 0;
        };
        const auto same = [](const explain::AnswerConflict& a, const explain::AnswerConflict& b) {
            const auto n = [](const std::string& v) { return text::normalize(v); };
            return (n(a.stated) == n(b.stated) && n(a.rival) == n(b.rival)) ||
                   (n(a.stated) == n(b.rival) && n(a.rival) == n(b.stated));
        };
        for (const auto* answers : {&graph_answers_, &passages_}) {
            for (const auto& p : *answers) {
                if (normalise_name(p.answer) != normalise_name(answer_)) continue;
                for (auto c : p.conflicts) {
                    if (std::any_of(found.begin(), found.end(),
                                    [&](const auto& f) { return same(f, c); }))
                        continue;
                    c.stated_citation = number(c.stated_selection);
                    c.rival_citation = number(c.rival_selection);
                    found.push_back(std::move(c));
                }
            }
        }
        return found;
    }

    // True when every fact looked up about `f`'s subject by `f`'s predicate gives one value.
    bool single_valued(const ObservedFact& f) const {
        return std::all_of(facts_.begin(), facts_.end(), [&](const StepFact& other) {
            const auto& o = other.fact;
            return o.triple.s != f.triple.s || o.triple.p != f.triple.p || o.triple.o == f.triple.o;
        });
    }

    // The citation a RAG tool's short answer came from: the first of its citations that the
    // short answer's selections name (else its first citation); nullptr when it cited none.
    static const schema::RagCitation* ground_of(const PassageAnswer& p) {
        for (const auto& c : p.citations) {
            if (std::find(p.answer_selections.begin(), p.answer_selections.end(), c.selection) !=
                p.answer_selections.end())
                return &c;
        }
        return p.citations.empty() ? nullptr : &p.citations.front();
    }

    // The value `p` gives, cited by `ground` and numbered as the agent's own citations number
    // that citation (0: not among them).
    static EvidenceValue cited_value(const PassageAnswer& p, const schema::RagCitation& ground,
                                     const AnswerEvidence& evidence) {
        EvidenceValue value{{}, {}, p.answer, ground.selection, {cited_source(ground)}, 0};
        for (const auto& c : evidence.citations)
            if (!c.selection.empty() && c.selection == ground.selection) value.citation = c.n;
        return value;
    }

    // A document tool's answer as a value: cited by the first of its passages the short answer
    // came from (else its first citation).
    static std::optional<EvidenceValue> passage_value(const PassageAnswer& p,
                                                      const AnswerEvidence& evidence) {
        const auto* ground = ground_of(p);
        if (ground == nullptr) return std::nullopt;
        return cited_value(p, *ground, evidence);
    }

    // A knowledge-query answer as a fact's value (edge_answer_value), numbered as the agent's
    // own citations number its edge.
    static std::optional<EvidenceValue> graph_value(const PassageAnswer& g,
                                                    const AnswerEvidence& evidence) {
        const auto* ground = ground_of(g);
        if (ground == nullptr) return std::nullopt;
        auto value = edge_answer_value(g.answer, *ground);
        if (value) value->citation = cited_value(g, *ground, evidence).citation;
        return value;
    }

    static std::string cited_source(const schema::RagCitation& c) {
        return c.chunk.empty() ? c.document : c.chunk;
    }

    // The citations that give a conflict's rival value: the rival's own, and every citation of a
    // RAG tool's answer that gives it (they back the rival, not the answer).
    std::set<std::uint32_t> rival_citations(const explain::AnswerConfidence& confidence,
                                            const AnswerEvidence& evidence) const {
        std::set<std::uint32_t> out;
        for (const auto& c : confidence.conflicts) {
            if (c.rival_citation != 0) out.insert(c.rival_citation);
            for (const auto* answers : {&passages_, &graph_answers_}) {
                for (const auto& p : *answers) {
                    if (text::normalize(p.answer) != text::normalize(c.rival)) continue;
                    for (const auto& cited : p.citations)
                        for (const auto& e : evidence.citations)
                            if (!e.selection.empty() && e.selection == cited.selection)
                                out.insert(e.n);
                }
            }
        }
        return out;
    }

    // What the answer adds after itself: sources that disagree (with both citations), then
    // sources past their collection's revalidation age. "" when neither.
    std::string notes(const explain::AnswerConfidence& confidence,
                      const AnswerEvidence& evidence) const {
        std::string note = reasoner::conflicts_note(confidence.conflicts, evidence.citations);
        // A RAG tool's answer text passed on may say either already, numbered as the agent numbers.
        if (!note.empty() && response_.find(note) != std::string::npos) note.clear();
        auto stale =
            schema::stale_sources_note(evidence.citations, std::chrono::system_clock::now());
        if (!stale.empty() && response_.find(stale) != std::string::npos) stale.clear();
        if (!stale.empty()) note += (note.empty() ? "" : " ") + stale;
        return note.empty() ? note : "\n\n" + note;
    }

    // The evidence the answer rests on: the lookup facts traced back from it, with the sources
    // the store recorded for them (one fact-sources request; if it fails the facts are cited
    // without a source, so their tier counts as not known), and the RAG tools' citations.
    AnswerEvidence rested_on(const std::vector<std::size_t>& behind) {
        std::vector<ObservedFact> chosen;
        std::vector<schema::Triple> triples;
        for (const std::size_t i : behind) {
            chosen.push_back(facts_[i].fact);
            triples.push_back(facts_[i].fact.triple);
        }
        std::vector<std::vector<schema::FactSource>> sources;
        if (!triples.empty()) {
            auto found = ToolRunner(context_, config_, request_.collection).fact_sources(triples);
            if (found) {
                sources = std::move(*found);
            } else {
                base::component_logger("agent")->warn("event=fact_sources_unavailable error=\"{}\"",
                                                      found.error().describe());
            }
        }
        return answer_evidence(chosen, sources, citations_, sources_);
    }

    // "agent:react > tool:triples-query > llm:extractive": the loop, the tools it used (in the
    // order first used) and the model.
    std::string derivation() const {
        std::string chain = "agent:react";
        for (const auto& tool : tools_used_) chain += " > tool:" + tool;
        if (!model_.empty()) chain += " > llm:" + model_;
        return chain;
    }

    runtime::RequestContext& context_;
    const AgentConfig& config_;
    const std::vector<Tool>& all_tools_;
    AgentTrace trace_;
    schema::AgentRequest request_;
    std::vector<Tool> tools_;
    std::string history_note_;
    std::string model_;
    std::uint64_t in_tokens_ = 0;
    std::uint64_t out_tokens_ = 0;
    std::size_t iterations_ = 0;
    std::string answer_;
    std::string response_;
    std::string best_answer_;
    std::string best_response_;
    std::optional<double> best_confidence_;  // the best answer's RAG tool's confidence
    std::size_t empty_lookups_ = 0;
    std::size_t tool_errors_ = 0;
    std::vector<std::string> sources_;            // the RAG tools' sources
    std::vector<schema::RagCitation> citations_;  // the RAG tools' citations
    std::vector<ToolText> tool_texts_;            // the RAG tools' answer texts, with their spans
    std::vector<StepFact> facts_;                 // every fact the lookups showed
    std::vector<std::size_t> query_facts_;        // into facts_: the latest graph-query's rows
    std::vector<std::string> tools_used_;
    std::vector<PassageAnswer> passages_;           // the document tools' short answers
    std::vector<PassageAnswer> graph_answers_;      // knowledge-query's short answers
    std::vector<std::size_t> document_iterations_;  // iterations that only asked the documents
};

}  // namespace

base::Result<ResolvedRequest> resolve_agent_request(const schema::AgentRequest& request,
                                                    const AgentConfig& config,
                                                    const std::vector<Tool>& tools) {
    if (request.question.empty())
        return make_error(ErrorType::kInvalidRequest, "\"question\" is empty");
    if (request.question.size() > config.max_question_bytes)
        return make_error(ErrorType::kInvalidRequest,
                          "\"question\" is " + std::to_string(request.question.size()) +
                              " bytes; at most " + std::to_string(config.max_question_bytes));
    // The conversation id names a turn in the trace store: bounded, printable (contract).
    if (request.session_id.size() > schema::kMaxSessionIdBytes)
        return make_error(ErrorType::kInvalidRequest,
                          "\"session_id\" is " + std::to_string(request.session_id.size()) +
                              " bytes; at most " + std::to_string(schema::kMaxSessionIdBytes));
    if (std::any_of(request.session_id.begin(), request.session_id.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
        return make_error(ErrorType::kInvalidRequest,
                          "\"session_id\" must not hold control characters");
    if (request.parent_uri && request.parent_uri->empty())
        return make_error(ErrorType::kInvalidRequest, "\"parent_uri\" is empty");
    if (request.max_iterations > config.max_iterations)
        return make_error(ErrorType::kInvalidRequest,
                          "\"max_iterations\" (" + std::to_string(request.max_iterations) +
                              ") may lower the worker's limit of " +
                              std::to_string(config.max_iterations) + ", not raise it");
    if (request.min_confidence &&
        !(*request.min_confidence >= 0.0 && *request.min_confidence <= 1.0))
        return make_error(ErrorType::kInvalidRequest,
                          "\"min_confidence\" must be a number from 0 to 1");
    auto selected = select_tools(tools, request.tools);
    if (!selected) return std::move(selected).error();
    ResolvedRequest resolved{request, std::move(*selected)};
    resolved.request.max_iterations =
        schema::or_default(request.max_iterations, config.max_iterations);
    resolved.request.min_confidence = request.min_confidence.value_or(config.min_confidence);
    return resolved;
}

void handle_agent(runtime::RequestContext& context, const AgentConfig& config,
                  const std::vector<Tool>& tools) {
    AgentRun(context, config, tools).run();
}

runtime::Handler make_agent_handler(AgentConfig config, std::vector<Tool> tools) {
    return [config = std::move(config), tools = std::move(tools)](
               runtime::RequestContext& context) { handle_agent(context, config, tools); };
}

}  // namespace glassbox::agent
