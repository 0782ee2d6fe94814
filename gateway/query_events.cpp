// The SSE events of one question: bus replies of a `query` request in, typed events out.
#include "gateway/query_events.hpp"

#include <cstdlib>

#include "gateway/bus_pool.hpp"
#include "gateway/explain_view.hpp"
#include "gateway/path_redaction.hpp"
#include "gateway/query_answer.hpp"
#include "schema/explain_terms.hpp"
#include "schema/untrusted_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::gateway {

using nlohmann::json;
namespace vocab = schema::vocab;

namespace {

// A literal's lexical form as a JSON number when it is one, else null.
json number_of(const std::optional<std::string>& lexical) {
    if (!lexical || lexical->empty()) return nullptr;
    char* end = nullptr;
    const double value = std::strtod(lexical->c_str(), &end);
    if (end == nullptr || *end != '\0') return nullptr;
    return value;
}

json or_null(const std::optional<std::string>& value) {
    return value ? json(*value) : json(nullptr);
}

json field_or(const json& object, const char* key, json fallback) {
    if (!object.is_object()) return fallback;
    const auto it = object.find(key);
    return it == object.end() ? fallback : *it;
}

// A short, one-line excerpt of an observation for tool.result.
std::string summary_of(const std::string& text) {
    constexpr std::size_t kMax = 300;
    std::string line = text.substr(0, kMax);
    for (char& c : line)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    return line;
}

}  // namespace

std::string format_sse(std::uint64_t id, const SseEvent& event) {
    // compact_json() escapes every control character, so the data is one line whatever the text
    // holds.
    std::string data = compact_json(event.data);
    if (!event.raw_members.empty() && data.size() >= 2 && data.back() == '}') {
        data.pop_back();
        if (data.size() > 1) data += ',';
        data += event.raw_members;
        data += '}';
    }
    return "event: " + event.name + "\nid: " + std::to_string(id) + "\ndata: " + data + "\n\n";
}

const json* explain_of(const bus::Reply& reply) {
    if (reply.kind == bus::ReplyKind::kExplain) return &reply.body;
    if (reply.kind != bus::ReplyKind::kData || string_of(reply.body, "message_type") != "explain")
        return nullptr;
    const auto inner = reply.body.find("explain");
    return inner != reply.body.end() && inner->is_object() ? &*inner : &reply.body;
}

SseEvent step_event(const json& explain, const std::string& trace, std::string_view text) {
    // JSON text holds a line break only between tokens (within strings it is escaped): a message
    // written on one line can go out as received.
    const bool one_line = !text.empty() && text.find_first_of("\r\n") == std::string_view::npos;
    // What leaves the gateway has plain triples (docs/protocol.md §8.1): a body in the dictionary
    // form is written out.
    const bool dictionary = schema::has_term_dictionary(explain);
    std::string message = dictionary ? compact_json(schema::plain_explain_body(explain))
                          : one_line ? std::string(text)
                                     : compact_json(explain);
    // A step's texts (an escalation's reason, a failed tool's observation) may quote a worker's
    // error naming a file of its host: those leave redacted, the message's IRIs as they are.
    if (!ServerPaths::instance().clean(message)) {
        json redacted = schema::plain_explain_body(explain);
        ServerPaths::instance().redact_json(redacted);
        message = compact_json(redacted);
    }
    const std::string parent = string_of(explain, "parent_uri");
    return SseEvent{"step",
                    json{{"trace", trace.empty() ? json(nullptr) : json(trace)},
                         {"step", string_of(explain, "explain_id")},
                         {"type", explain_step_type(explain)},
                         {"parent", parent.empty() ? json(nullptr) : json(parent)},
                         {"service", string_of(explain, "service")},
                         {"seq", field_or(explain, "seq", nullptr)},
                         {"session", string_of(explain, "session")}},
                    "\"explain\":" + message};
}

QueryEvents::QueryEvents(std::string request_id, json request, Clock::time_point received)
    : request_id_(std::move(request_id)), request_(std::move(request)), received_(received) {}

SseEvent QueryEvents::event(std::string name, json data) const {
    // What workers say of their steps (an escalation's or a retraction's reason, a tool's
    // observation) may quote an error naming a file of their host; the answer's own text and
    // evidence are data, and answer.done guards its free texts itself (query_answer.hpp).
    if (name != "answer.delta" && name != "citation" && name != "answer.done" &&
        name != "retrieval.results")
        ServerPaths::instance().redact_json(data);
    data["trace"] = trace_.empty() ? json(nullptr) : json(trace_);
    return SseEvent{std::move(name), std::move(data)};
}

void QueryEvents::start(std::vector<SseEvent>& out) {
    if (started_) return;
    started_ = true;
    out.push_back(event("run.started", json{{"request_id", request_id_},
                                            {"question", field_or(request_, "question", "")},
                                            {"mode", field_or(request_, "mode", "auto")},
                                            {"collection", field_or(request_, "collection", "")}}));
}

std::vector<SseEvent> QueryEvents::on_reply(const bus::Reply& reply) {
    std::vector<SseEvent> out;
    if (finished_) return out;
    switch (reply.kind) {
        case bus::ReplyKind::kExplain:
            // The query's own steps: its first message names the trace.
            if (trace_.empty()) trace_ = string_of(reply.body, "session");
            start(out);
            step(reply.body, out, reply.text);
            break;
        case bus::ReplyKind::kData: {
            const json& body = reply.body;
            start(out);
            if (const json* explain = explain_of(reply)) {
                // An engine's sub-run, forwarded by the router (an agent wraps its tools' ones).
                step(*explain, out);
            } else if (string_of(body, "message_type") == "retract") {
                // The reflection rejected a run (docs/query.md §1): everything streamed so far is
                // taken back, so the deltas after the last retract add up to the final answer.
                streamed_.clear();
                out.push_back(
                    event("answer.retract", json{{"engine", field_or(body, "engine", nullptr)},
                                                 {"run", field_or(body, "run", nullptr)},
                                                 {"reason", field_or(body, "reason", nullptr)}}));
            } else if (const std::string text = string_of(body, "response"); !text.empty()) {
                streamed_ += text;
                json data{{"text", text}};
                // Provenance of a piece: which run it came from, and whether it is the replayed
                // winner.
                for (const char* key : {"engine", "run", "provisional", "replay"})
                    if (body.contains(key)) data[key] = body[key];
                out.push_back(event("answer.delta", std::move(data)));
            }
            break;
        }
        case bus::ReplyKind::kFinal:
            start(out);
            if (auto error = body_error(reply.body)) {
                fail(*error, out);
            } else {
                final(reply.body, out);
            }
            break;
        case bus::ReplyKind::kError:
            fail(reply.error.value_or(base::make_error(base::ErrorType::kInternal, "error")), out);
            break;
    }
    return out;
}

std::vector<SseEvent> QueryEvents::on_failure(const base::Error& error) {
    std::vector<SseEvent> out;
    if (!finished_) fail(error, out);
    return out;
}

void QueryEvents::fail(const base::Error& error, std::vector<SseEvent>& out) {
    start(out);
    out.push_back(event("error", json{{"type", std::string(base::to_string(error.type))},
                                      {"message", ServerPaths::instance().redact(error.message)}}));
    out.push_back(event("done", json{{"termination_reason", "error"}, {"status", "error"}}));
    finished_ = true;
}

void QueryEvents::step(const json& explain, std::vector<SseEvent>& out, std::string_view text) {
    if (!explain.is_object()) return;
    const std::string id = string_of(explain, "explain_id");
    const std::string session = string_of(explain, "session");
    const std::string type = explain_step_type(explain);
    out.push_back(step_event(explain, trace_, text));
    if (type == "RoutingDecision") {
        json scores = json::object();
        for (const auto& line : explain_values(explain, id, vocab::kRouteScore)) {
            const auto space = line.rfind(' ');
            if (space == std::string::npos) continue;
            scores[line.substr(0, space)] = number_of(line.substr(space + 1));
        }
        out.push_back(
            event("route.decided",
                  json{{"step", id},
                       {"engine", or_null(explain_value(explain, id, vocab::kEngine))},
                       {"method", or_null(explain_value(explain, id, vocab::kRoutingMethod))},
                       {"question_type", or_null(explain_value(explain, id, vocab::kQuestionType))},
                       {"rules_fired", explain_values(explain, id, vocab::kRuleFired)},
                       {"confidence", number_of(explain_value(explain, id, vocab::kConfidence))},
                       {"scores", scores}}));
    } else if (type == "Escalation") {
        out.push_back(
            event("escalation",
                  json{{"step", id},
                       {"from", or_null(explain_value(explain, id, vocab::kFromEngine))},
                       {"to", or_null(explain_value(explain, id, vocab::kEngine))},
                       {"reason", or_null(explain_value(explain, id, vocab::kReason))},
                       {"relevance", number_of(explain_value(explain, id, vocab::kRelevance))}}));
    } else if (type.find("ToolUse") != std::string::npos) {
        const json iteration = number_of(explain_value(explain, id, vocab::kIteration));
        const std::string tool = explain_value(explain, id, vocab::kAction).value_or("");
        tools_[session + " " + compact_json(iteration)] = tool;
        json args = nullptr;
        if (auto text = explain_value(explain, id, vocab::kArguments)) {
            auto parsed = schema::parse_untrusted_json(*text);
            args = parsed ? std::move(parsed).value() : json(*text);
        }
        out.push_back(
            event("tool.call",
                  json{{"step", id}, {"iteration", iteration}, {"tool", tool}, {"args", args}}));
    } else if (type == "Observation") {
        const json iteration = number_of(explain_value(explain, id, vocab::kIteration));
        const auto tool = tools_.find(session + " " + compact_json(iteration));
        out.push_back(event(
            "tool.result",
            json{{"step", id},
                 {"iteration", iteration},
                 {"tool", tool == tools_.end() ? json(nullptr) : json(tool->second)},
                 {"ok", explain_value(explain, id, vocab::kToolStatus).value_or("ok") == "ok"},
                 {"summary",
                  summary_of(explain_value(explain, id, vocab::kObservationText).value_or(""))}}));
    }
    retrieval(explain, id, out);
    if (session == trace_ && (type == "Conclusion" || type == "Synthesis")) {
        if (auto reason = explain_value(explain, id, vocab::kTerminationReason))
            termination_ = *reason;
    }
}

void QueryEvents::retrieval(const json& explain, const std::string& id,
                            std::vector<SseEvent>& out) {
    // Graph RAG's kept edges (Focus), document RAG's retrieved and ranked chunks (Exploration,
    // Focus): each selection with what its own triples say of it.
    const auto selections = [&](std::string_view link, const char* kind) {
        const auto uris = explain_values(explain, id, link);
        if (uris.empty()) return;
        const bool edges = std::string_view(kind) == "edges";
        // One pass over the message for all its selections (a Focus holds dozens).
        const auto table = explain_table(
            explain, uris,
            {vocab::kScore, vocab::kDataTier, vocab::kSourceChunk, vocab::kSourceDocument,
             vocab::kRdfSubject, vocab::kRdfPredicate, vocab::kRdfObject, vocab::kReasoning});
        json items = json::array();
        for (std::size_t i = 0; i < uris.size(); ++i) {
            const auto& row = table[i];
            json item{{"selection", uris[i]},
                      {"score", number_of(row[0])},
                      {"tier", number_of(row[1])},
                      {"chunk", or_null(row[2])},
                      {"document", or_null(row[3])}};
            if (edges) {
                item["s"] = or_null(row[4]);
                item["p"] = or_null(row[5]);
                item["o"] = or_null(row[6]);
                item["reasoning"] = or_null(row[7]);
            }
            items.push_back(std::move(item));
        }
        out.push_back(event("retrieval.results",
                            json{{"step", id}, {"kind", kind}, {"items", std::move(items)}}));
    };
    selections(vocab::kSelectedEdge, "edges");
    // Graph RAG's explored edges (Exploration): the subgraph the traversal reached, kept or not.
    if (const auto explored = explain_values(explain, id, vocab::kExploredEdgeProperty);
        !explored.empty()) {
        const auto table = explain_table(
            explain, explored,
            {vocab::kRdfSubject, vocab::kRdfPredicate, vocab::kRdfObject, vocab::kHop});
        json items = json::array();
        for (std::size_t i = 0; i < explored.size(); ++i) {
            const auto& row = table[i];
            items.push_back(json{{"edge", explored[i]},
                                 {"s", or_null(row[0])},
                                 {"p", or_null(row[1])},
                                 {"o", or_null(row[2])},
                                 {"hop", number_of(row[3])}});
        }
        out.push_back(event("retrieval.results",
                            json{{"step", id}, {"kind", "explored"}, {"items", std::move(items)}}));
    }
    selections(vocab::kRetrievedChunk, "chunks");
    selections(vocab::kSelectedChunk, "chunks");
}

void QueryEvents::citations(const json& body, std::vector<SseEvent>& out) {
    const auto list = body.find("citations");
    if (list == body.end() || !list->is_array()) return;
    for (const auto& c : *list) {
        if (!c.is_object()) continue;
        const std::string chunk = string_of(c, "chunk");
        const std::string document = string_of(c, "document");
        // A source is a chunk, or for a fact loaded from a whole file its document and the fact.
        const std::string key = !chunk.empty() ? chunk : document + "\n" + string_of(c, "text");
        json data{{"n", field_or(c, "n", nullptr)},
                  {"spans", field_or(c, "spans", json::array())},
                  {"selection", field_or(c, "selection", nullptr)},
                  {"kind", field_or(c, "kind", nullptr)}};
        if ((chunk.empty() && document.empty()) || sources_sent_.insert(key).second) {
            data["source"] = json{{"document", document},
                                  {"title", field_or(c, "title", "")},
                                  {"chunk", chunk},
                                  {"char_offset", field_or(c, "char_offset", nullptr)},
                                  {"char_end", field_or(c, "char_end", nullptr)},
                                  {"tier", field_or(c, "tier", 0)},
                                  {"text", field_or(c, "text", "")}};
            // An edge's fact in parts (docs/rag.md §1), when the engine gave them.
            for (const char* key : {"subject", "predicate", "object"})
                if (c.contains(key)) data["source"][key] = c[key];
        } else {
            data["source_ref"] = chunk.empty() ? document : chunk;
        }
        out.push_back(event("citation", std::move(data)));
    }
}

void QueryEvents::final(const json& body, std::vector<SseEvent>& out) {
    const std::string session = string_of(body, "session");
    if (trace_.empty()) trace_ = session;
    // A question asked without streaming (or whose engine sent its text only at the end) has
    // streamed nothing since the last retract: the whole text is one delta.
    const std::string response = string_of(body, "response");
    if (streamed_.empty() && !response.empty())
        out.push_back(event("answer.delta", json{{"text", response}}));
    citations(body, out);
    std::string reason = string_of(body, "termination");
    if (reason.empty()) reason = termination_.empty() ? "answered" : termination_;
    // The same answer as a question asked for JSON gets (query_answer.hpp).
    const auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - received_);
    json answer =
        query_answer(body, AnswerContext{string_of(request_, "question"),
                                         string_of(request_, "collection"), request_id_, took});
    answer["termination_reason"] = reason;
    answered_by_ = string_of(body, "engine");
    out.push_back(event("answer.done", std::move(answer)));
    out.push_back(event("done", json{{"termination_reason", reason}, {"status", "complete"}}));
    finished_ = true;
}

}  // namespace glassbox::gateway
