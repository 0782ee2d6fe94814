// ExtractiveProvider: each built-in template's variables parsed and checked, then the matching
// call of the offline reasoner (reasoner/reasoner.hpp).
#include "workers/llm/extractive_provider.hpp"

#include <algorithm>
#include <atomic>
#include <thread>

#include "base/log.hpp"
#include "workers/llm/json_variable.hpp"

namespace glassbox::llm {

using base::ErrorType;
using base::make_error;
using nlohmann::json;
using reasoner::CancelCheck;
using reasoner::ComposedAnswer;
using reasoner::ExtractiveModel;
using reasoner::LabelledEdge;
using reasoner::TextChunk;

namespace {

// A JSON variable: the template's own parse when it declares it as JSON (read in place, not
// copied), else parsed here into `parsed`.
base::Result<const json*> json_variable(const PromptInput& input, const std::string& name,
                                        json& parsed) {
    if (auto it = input.rendered.json_variables.find(name);
        it != input.rendered.json_variables.end())
        return &it->second;
    const auto raw = input.variables.find(name);
    if (raw == input.variables.end())
        return make_error(ErrorType::kInvalidRequest, "template " + input.prompt_template.name +
                                                          " needs variable \"" + name + "\"");
    auto read = parse_json_variable(raw->second);
    if (!read)
        return make_error(ErrorType::kInvalidRequest,
                          "variable \"" + name + "\" must be JSON text: " + read.error().message);
    parsed = std::move(read).value();
    return &parsed;
}

std::string text_variable(const PromptInput& input, const std::string& name) {
    const auto it = input.variables.find(name);
    return it == input.variables.end() ? std::string() : it->second;
}

base::Result<std::vector<LabelledEdge>> edges_of(const PromptInput& input) {
    json parsed;
    auto found = json_variable(input, "edges", parsed);
    if (!found) return std::move(found).error();
    const json* value = *found;
    const auto bad = [] {
        return make_error(
            ErrorType::kInvalidRequest,
            "variable \"edges\" must be a JSON array of {\"id\", \"s\", \"p\", \"o\"} strings");
    };
    if (!value->is_array()) return bad();
    if (value->size() > ExtractiveProvider::kMaxEdges)
        return make_error(ErrorType::kInvalidRequest,
                          "variable \"edges\" holds " + std::to_string(value->size()) +
                              " edges; the extractive provider takes at most " +
                              std::to_string(ExtractiveProvider::kMaxEdges) +
                              " (ExtractiveProvider::kMaxEdges)");
    std::vector<LabelledEdge> edges;
    edges.reserve(value->size());
    for (const json& e : *value) {
        if (!e.is_object()) return bad();
        LabelledEdge edge;
        for (auto [field, key] : {std::pair{&edge.id, "id"}, std::pair{&edge.s, "s"},
                                  std::pair{&edge.p, "p"}, std::pair{&edge.o, "o"}}) {
            const auto it = e.find(key);
            if (it == e.end() || !it->is_string()) return bad();
            *field = it->get<std::string>();
        }
        edges.push_back(std::move(edge));
    }
    return edges;
}

base::Result<std::vector<TextChunk>> chunks_of(const PromptInput& input) {
    json parsed;
    auto found = json_variable(input, "chunks", parsed);
    if (!found) return std::move(found).error();
    const json* value = *found;
    const auto bad = [] {
        return make_error(
            ErrorType::kInvalidRequest,
            "variable \"chunks\" must be a JSON array of {\"id\", \"text\", \"title\"}");
    };
    if (!value->is_array()) return bad();
    std::vector<TextChunk> chunks;
    for (const json& c : *value) {
        if (!c.is_object() || !c.contains("id") || !c["id"].is_string() || !c.contains("text") ||
            !c["text"].is_string())
            return bad();
        TextChunk chunk{c["id"].get<std::string>(), c["text"].get<std::string>(), ""};
        if (const auto t = c.find("title"); t != c.end() && t->is_string())
            chunk.title = t->get<std::string>();
        chunks.push_back(std::move(chunk));
    }
    return chunks;
}

// One warning a minute at most: a missing embeddings service would otherwise log per request.
void warn_embeddings_unavailable(const base::Error& error) {
    static std::atomic<std::int64_t> last_warning{0};
    const auto now =
        std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
    auto last = last_warning.load();
    if (now - last < 60 && last != 0) return;
    if (!last_warning.compare_exchange_strong(last, now)) return;
    base::component_logger("llm")->warn(
        "event=embeddings_unavailable fallback=lexical error=\"{}\"", error.describe());
}

// The request's cancel check (the deadline included) for the model's long loops.
CancelCheck cancel_check(const GenerateOptions& options) {
    const auto deadline = options.deadline;
    const auto cancelled = options.cancelled;
    if (!deadline && !cancelled) return {};
    return [deadline, cancelled] {
        return (cancelled && cancelled()) || (deadline && Clock::now() >= *deadline);
    };
}

base::Error cancelled_error() {
    return make_error(ErrorType::kCancelled,
                      "the request was cancelled (or its deadline passed) while scoring");
}

// The answer contract's form (docs/llm.md): the Answer line ("Answer:" alone when undecided),
// then the sentences joined by single spaces. Streamed as the line, then one piece a sentence.
Completion text_completion(const ComposedAnswer& composed, const GenerateOptions& options) {
    Completion c;
    std::string line = "Answer:";
    if (!composed.answer.empty()) {
        line += " " + composed.answer + " ";
        for (const auto& id : composed.answer_ids) line += "[" + id + "]";
        while (line.back() == ' ') line.pop_back();
    }
    const auto send = [&](const std::string& piece) {
        if (options.on_text) options.on_text(piece);
        c.text += piece;
    };
    send(line);
    for (std::size_t i = 0; i < composed.sentences.size(); ++i)
        send((i == 0 ? "\n" : " ") + composed.sentences[i]);
    return c;
}

// The "concepts" variable: at most ExtractiveProvider::kMaxConcepts; its strings, in order.
base::Result<std::vector<std::string>> concepts_of(const PromptInput& input) {
    json parsed;
    auto found = json_variable(input, "concepts", parsed);
    if (!found) return std::move(found).error();
    const json* concepts_json = *found;
    std::vector<std::string> concepts;
    if (concepts_json->is_array() && concepts_json->size() > ExtractiveProvider::kMaxConcepts)
        return make_error(ErrorType::kInvalidRequest,
                          "variable \"concepts\" holds " + std::to_string(concepts_json->size()) +
                              " concepts; the extractive provider takes at most " +
                              std::to_string(ExtractiveProvider::kMaxConcepts) +
                              " (ExtractiveProvider::kMaxConcepts)");
    if (concepts_json->is_array()) {
        for (const json& c : *concepts_json)
            if (c.is_string()) concepts.push_back(c.get<std::string>());
    }
    return concepts;
}

// The cosine of the question and each edge's "s p o" from the caller's similarity function;
// empty when there is none or it failed (then the scoring is lexical only).
std::vector<double> embedding_similarity(const std::string& question,
                                         const std::vector<LabelledEdge>& edges,
                                         const GenerateOptions& options) {
    if (!options.similarity || edges.empty()) return {};
    std::vector<std::string> texts;
    texts.reserve(edges.size());
    for (const auto& e : edges) {
        std::string& t = texts.emplace_back();
        t.reserve(e.s.size() + e.p.size() + e.o.size() + 2);
        t.append(e.s).append(1, ' ').append(e.p).append(1, ' ').append(e.o);
    }
    auto similarity = options.similarity(question, texts);
    if (similarity && similarity->size() == edges.size()) return std::move(similarity).value();
    warn_embeddings_unavailable(
        similarity ? make_error(ErrorType::kUpstreamError, "wrong number of vectors")
                   : similarity.error());
    return {};
}

// {list_key: [{"id": edge id, field: value}, …]}, one item per edge in order. Built member by
// member: a nested initializer list copies every value it holds once more.
template <typename Value>
json per_edge_answer(const char* list_key, std::vector<LabelledEdge> edges, const char* field,
                     std::vector<Value> values) {
    json answer = json::object();
    auto& list = answer[list_key];
    list = json::array();
    auto& items = list.get_ref<json::array_t&>();
    items.reserve(edges.size());
    for (std::size_t i = 0; i < edges.size(); ++i) {
        auto& item = items.emplace_back(json::object());
        item["id"] = std::move(edges[i].id);
        item[field] = std::move(values[i]);
    }
    return answer;
}

// kg-edge-scoring: {"scores": [{"id", "score"}, …]}, one per edge in order.
base::Result<json> edge_scores(const ExtractiveModel& model, const PromptInput& input,
                               const std::string& question, const GenerateOptions& options) {
    auto edges = edges_of(input);
    if (!edges) return std::move(edges).error();
    auto concepts = concepts_of(input);
    if (!concepts) return std::move(concepts).error();
    const std::vector<double> similarity = embedding_similarity(question, *edges, options);
    const auto scores =
        model.score_edges(question, *concepts, *edges, similarity.empty() ? nullptr : &similarity,
                          cancel_check(options));
    if (!scores) return cancelled_error();
    return per_edge_answer("scores", std::move(*edges), "score", *scores);
}

// kg-edge-reasoning: {"reasons": [{"id", "reasoning"}, …]}, one per edge in order.
base::Result<json> edge_reasons(const ExtractiveModel& model, const PromptInput& input,
                                const std::string& question, const GenerateOptions& options) {
    auto edges = edges_of(input);
    if (!edges) return std::move(edges).error();
    auto reasons = model.reason_edges(question, *edges, cancel_check(options));
    if (!reasons) return cancelled_error();
    return per_edge_answer("reasons", std::move(*edges), "reasoning", std::move(*reasons));
}

// agent-react: the planner's next step, as the template's reply text.
base::Result<std::string> react_step(const PromptInput& input, const std::string& question) {
    json parsed_tools;
    auto tools = json_variable(input, "tools", parsed_tools);
    if (!tools) return std::move(tools).error();
    json parsed_steps;
    auto steps = json_variable(input, "steps", parsed_steps);
    if (!steps) return std::move(steps).error();
    // The conversation's earlier turns are optional (a template without them still plans).
    json parsed_history;
    auto history = json_variable(input, "history", parsed_history);
    return reasoner::render_react(
        reasoner::plan_agent_turn(question, **tools, **steps, history ? **history : json::array()));
}

// A template this provider does not answer.
base::Error unanswered_template(const std::string& name) {
    if (name == "relevance-judge" || name == "rephrase-query") {
        // These need a model: a score or a rewording made up from word overlap would pose as a
        // model's judgement. The query worker falls back to its model-free reflection (recorded).
        return make_error(
            ErrorType::kInvalidRequest,
            "not supported by this provider: the extractive provider does not answer \"" + name +
                "\" (it needs a model)");
    }
    return make_error(ErrorType::kInvalidRequest,
                      "the extractive provider answers only the built-in templates "
                      "(extract-concepts, kg-edge-scoring, kg-edge-reasoning, kg-synthesis, "
                      "document-synthesis, agent-react), not \"" +
                          name + "\"; configure a model for others");
}

}  // namespace

base::Result<void> ExtractiveProvider::wait_delay(const GenerateOptions& options) const {
    const auto until = Clock::now() + delay_;
    for (auto now = Clock::now(); now < until; now = Clock::now()) {
        if (options.cancelled && options.cancelled())
            return make_error(ErrorType::kCancelled, "the request was cancelled");
        if (options.deadline && now >= *options.deadline)
            return make_error(ErrorType::kTimeout, "the request's deadline passed");
        std::this_thread::sleep_for(
            std::min<Clock::duration>(until - now, std::chrono::milliseconds{10}));
    }
    return {};
}

base::Result<Completion> ExtractiveProvider::generate(const PromptInput& input,
                                                      const GenerateOptions& options) {
    if (delay_.count() > 0) {
        if (auto waited = wait_delay(options); !waited) return std::move(waited).error();
    }
    const std::string& name = input.prompt_template.name;
    const std::string question = text_variable(input, "question");
    Completion completion;
    if (name == "extract-concepts") {
        completion.json = json{{"concepts", model_.extract_concepts(question)}};
    } else if (name == "kg-edge-scoring" || name == "kg-edge-reasoning") {
        auto answer = name == "kg-edge-scoring" ? edge_scores(model_, input, question, options)
                                                : edge_reasons(model_, input, question, options);
        if (!answer) return std::move(answer).error();
        completion.json = std::move(answer).value();
    } else if (name == "kg-synthesis") {
        auto edges = edges_of(input);
        if (!edges) return std::move(edges).error();
        completion = text_completion(model_.answer_from_edges(question, *edges), options);
    } else if (name == "document-synthesis") {
        auto chunks = chunks_of(input);
        if (!chunks) return std::move(chunks).error();
        completion = text_completion(model_.answer_from_chunks(question, *chunks), options);
    } else if (name == "agent-react") {
        auto step = react_step(input, question);
        if (!step) return std::move(step).error();
        completion.text = std::move(step).value();
        if (options.on_text) options.on_text(completion.text);
    } else {
        return unanswered_template(name);
    }
    if (completion.json) {
        completion.text = completion.json->dump();
        completion.text_is_json_dump = true;
    }
    completion.model = std::string(ExtractiveModel::kModelName);
    completion.in_tokens = reasoner::count_words(input.rendered.text);
    completion.out_tokens = reasoner::count_words(completion.text);
    return completion;
}

}  // namespace glassbox::llm
