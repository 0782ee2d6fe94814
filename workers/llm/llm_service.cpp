// The llm handler: decode, find and render the template, run the provider, check and answer.
#include "workers/llm/llm_service.hpp"

#include <atomic>
#include <map>
#include <stdexcept>
#include <string_view>
#include <unordered_set>

#include "base/log.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages.hpp"
#include "text/builtin_embeddings.hpp"
#include "text/feature_hashing.hpp"
#include "text/similarity.hpp"
#include "workers/llm/answer_contract.hpp"
#include "workers/llm/json_schema.hpp"
#include "workers/llm/llm_request.hpp"

namespace glassbox::llm {

using base::Error;
using base::ErrorType;
using base::make_error;
using nlohmann::json;

namespace {

constexpr std::chrono::milliseconds kDeadlineSlack{10};
constexpr std::chrono::milliseconds kMinEmbeddingsBudget{20};

// Shared by every handler copy: when the embeddings service last failed.
struct EmbeddingsGate {
    explicit EmbeddingsGate(std::chrono::milliseconds builtin_ttl) : builtin(builtin_ttl) {}
    std::atomic<std::int64_t> closed_until_ms{0};
    // Whether the service's model is the built-in hashing one, whose vectors are computed here.
    text::BuiltinEmbeddings builtin;
};

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
        .count();
}

// One entry per given edge, in their order: what the answer said for its id, else `missing`.
json per_edge(const json& answer_list, const json& edges, const char* field, const json& missing,
              bool clamp) {
    std::map<std::string, json> by_id;
    if (answer_list.is_array()) {
        for (const json& item : answer_list) {
            if (!item.is_object() || !item.contains("id") || !item["id"].is_string() ||
                !item.contains(field))
                continue;
            by_id.emplace(item["id"].get<std::string>(), item[field]);
        }
    }
    json out = json::array();
    for (const json& e : edges) {
        const std::string id = e.value("id", "");
        auto it = by_id.find(id);
        json value = it == by_id.end() ? missing : it->second;
        if (clamp && value.is_number()) value = std::clamp(value.get<double>(), 0.0, 1.0);
        out.push_back({{"id", id}, {field, std::move(value)}});
    }
    return out;
}

// True when `answer` is what complete_per_edge would make of it: {list_key: [...]} with one
// item per edge, in order, each exactly {"id": the edge's id, field: a value}, no id twice, no
// number outside [0, 1] when `clamp`. (The extractive provider always answers so; checking is
// cheaper than building the completed answer to compare.) False tells nothing.
bool complete_already(const json& answer, const json& edges, const char* list_key,
                      const char* field, bool clamp) {
    if (!answer.is_object() || answer.size() != 1) return false;
    const auto list = answer.find(list_key);
    if (list == answer.end() || !list->is_array() || list->size() != edges.size()) return false;
    std::unordered_set<std::string_view> seen;
    for (std::size_t i = 0; i < edges.size(); ++i) {
        const json& item = (*list)[i];
        const json& edge = edges[i];
        if (!item.is_object() || item.size() != 2 || !edge.is_object()) return false;
        const auto id = item.find("id");
        const auto edge_id = edge.find("id");
        const auto value = item.find(field);
        if (id == item.end() || !id->is_string() || edge_id == edge.end() ||
            !edge_id->is_string() || value == item.end())
            return false;
        const auto& text = id->get_ref<const std::string&>();
        if (text != edge_id->get_ref<const std::string&>() || !seen.insert(text).second)
            return false;
        if (clamp && value->is_number()) {
            const double v = value->get<double>();
            if (!(v >= 0.0 && v <= 1.0)) return false;
        }
    }
    return true;
}

// kg-edge-scoring and kg-edge-reasoning answer for exactly the edges given (a model may skip
// one or invent an id).
void complete_per_edge(const PromptTemplate& t, const RenderedPrompt& rendered, Completion& c) {
    const auto edges = rendered.json_variables.find("edges");
    if (edges == rendered.json_variables.end() || !edges->second.is_array() || !c.json) return;
    if (t.name == "kg-edge-scoring" &&
        complete_already(*c.json, edges->second, "scores", "score", true))
        return;
    if (t.name == "kg-edge-reasoning" &&
        complete_already(*c.json, edges->second, "reasons", "reasoning", false))
        return;
    json fixed;
    if (t.name == "kg-edge-scoring") {
        fixed = {{"scores", per_edge((*c.json)["scores"], edges->second, "score", 0.0, true)}};
    } else if (t.name == "kg-edge-reasoning") {
        fixed = {{"reasons", per_edge((*c.json)["reasons"], edges->second, "reasoning",
                                      "no reason given", false)}};
    } else {
        return;
    }
    if (fixed != *c.json) {
        c.json = std::move(fixed);
        c.text = c.json->dump();
        c.text_is_json_dump = true;
    }
}

Error map_provider_error(runtime::RequestContext& context, Error error) {
    if (context.cancelled()) return context.cancellation_error();
    if (error.type == ErrorType::kTimeout && context.remaining() <= kDeadlineSlack) {
        return make_error(
            ErrorType::kDeadlineExceeded,
            "the request's deadline passed while the model answered: " + error.message);
    }
    // On the bus ServiceUnavailable means "no worker for this service": an endpoint that cannot
    // be reached is this service's upstream failing.
    if (error.type == ErrorType::kServiceUnavailable) error.type = ErrorType::kUpstreamError;
    return error;
}

// The cosines of the query and each text from the embeddings service's vectors (one call for
// all), or computed here while its model is the built-in one.
SimilarityFunction similarity_through(runtime::RequestContext& context,
                                      const LlmServiceOptions& options, EmbeddingsGate& gate) {
    if (options.embeddings_service.empty()) return {};
    return [&context, &options, &gate](
               const std::string& query,
               const std::vector<std::string>& texts) -> base::Result<std::vector<double>> {
        if (now_ms() < gate.closed_until_ms.load())
            return make_error(ErrorType::kServiceUnavailable,
                              "embeddings skipped after a recent failure");
        // The cosines of the vectors the service would compute, bit for bit (the same code and
        // dimension).
        if (const std::uint32_t dim = gate.builtin.dim_now(); dim > 0)
            return text::feature_cosines(query, texts, dim);
        const auto budget = std::min(options.embeddings_timeout, context.remaining() / 4);
        if (budget < kMinEmbeddingsBudget)
            return make_error(ErrorType::kDeadlineExceeded,
                              "too little time left to ask for embeddings");
        std::vector<std::string> asked;
        asked.reserve(texts.size() + 1);
        asked.push_back(query);
        asked.insert(asked.end(), texts.begin(), texts.end());
        auto result = context.call(options.embeddings_service, json{{"texts", asked}}, budget, {},
                                   runtime::FinalBody::kTextOnly);
        if (!result) {
            const bool missing = result.error().type == ErrorType::kUnknownService ||
                                 result.error().type == ErrorType::kServiceUnavailable;
            gate.closed_until_ms.store(now_ms() + (missing
                                                       ? options.embeddings_backoff.count()
                                                       : options.embeddings_backoff.count() / 6));
            return std::move(result).error();
        }
        auto response = schema::decode_text<schema::EmbeddingsResponse>(result->final_text);
        if (!response) return std::move(response).error();
        gate.builtin.saw(response->model, response->dim);
        const auto& vectors = response->vectors;
        if (vectors.size() != asked.size())
            return make_error(ErrorType::kUpstreamError, "wrong number of vectors");
        std::vector<double> cosines;
        cosines.reserve(texts.size());
        for (std::size_t i = 1; i < vectors.size(); ++i)
            cosines.push_back(text::cosine(vectors[0], vectors[i]));
        return cosines;
    };
}

// The request: a body the runtime left as text (reads_body_as_text) is read without a tree.
base::Result<schema::LlmRequest> request_of(const runtime::RequestContext& context) {
    if (context.body().is_null() && !context.body_text().empty())
        return decode_request_text(context.body_text());
    return check_request(context.body());
}

// The FINAL: `response` (the contract's parts, if any) with the completion's answer. A JSON
// answer whose text is its dump goes out as that text, not dumped again.
void reply_completed(runtime::RequestContext& context, Completion completion,
                     schema::LlmResponse response) {
    response.text = std::move(completion.text);
    response.json = std::move(completion.json);
    response.model = std::move(completion.model);
    response.in_token = completion.in_tokens;
    response.out_token = completion.out_tokens;
    response.end_of_stream = true;
    (void)context.reply_text(schema::encode_text(response, completion.text_is_json_dump));
}

void handle(runtime::RequestContext& context, const TemplateSet& templates, Provider& provider,
            const LlmServiceOptions& options, EmbeddingsGate& gate) {
    auto request = request_of(context);
    if (!request) {
        (void)context.fail(request.error());
        return;
    }
    const PromptTemplate* t = templates.find(request->template_name);
    if (t == nullptr) {
        std::string known;
        for (const auto& name : templates.names()) known += (known.empty() ? "" : ", ") + name;
        (void)context.fail(make_error(
            ErrorType::kNotFound,
            "unknown template \"" + request->template_name + "\" (known: " + known + ")"));
        return;
    }
    auto rendered = t->render(request->variables);
    if (!rendered) {
        (void)context.fail(rendered.error());
        return;
    }
    GenerateOptions generate;
    generate.deadline = context.meta().deadline;
    generate.cancelled = [&context] { return context.cancelled(); };
    // A first-line template's Answer line is never streamed: users read the sentences.
    AnswerLineHold hold;
    if (request->streaming && t->output == OutputKind::kText) {
        const bool hold_line = t->answer == AnswerForm::kFirstLine;
        generate.on_text = [&context, &hold, hold_line](std::string_view piece) {
            std::string shown = hold_line ? hold.feed(piece) : std::string(piece);
            if (!shown.empty()) (void)context.send_partial(json{{"text", std::move(shown)}});
        };
    }
    generate.similarity = similarity_through(context, options, gate);

    auto completion = provider.generate(PromptInput{*t, request->variables, *rendered}, generate);
    if (!completion) {
        (void)context.fail(map_provider_error(context, completion.error()));
        return;
    }
    if (t->output == OutputKind::kJson) {
        if (!completion->json) {
            json parsed;
            if (auto why = check_json_answer(*t, completion->text, parsed)) {
                (void)context.fail(
                    make_error(ErrorType::kUpstreamError, "template " + t->name + ": " + *why));
                return;
            }
            completion->json = std::move(parsed);
        } else if (auto why = validate_json(*completion->json, t->schema)) {
            (void)context.fail(make_error(
                provider.name() == "extractive" ? ErrorType::kInternal : ErrorType::kUpstreamError,
                "template " + t->name +
                    ": the answer does not match the template's JSON Schema: " + *why));
            return;
        }
        complete_per_edge(*t, *rendered, *completion);
    }
    schema::LlmResponse response;
    if (t->output == OutputKind::kText && has_contract(*t)) {
        // The openai provider already repaired what it could; the extractive one must hold it.
        ContractReply split;
        if (auto why = check_reply(*t, *rendered, completion->text, split)) {
            (void)context.fail(make_error(
                provider.name() == "extractive" ? ErrorType::kInternal : ErrorType::kUpstreamError,
                "template " + t->name + ": " + *why));
            return;
        }
        completion->text = std::move(split.text);
        completion->text_is_json_dump = false;
        response.answer = std::move(split.answer);
        response.answer_ids = std::move(split.answer_ids);
    }
    reply_completed(context, std::move(*completion), std::move(response));
}

}  // namespace

runtime::Handler make_llm_handler(std::shared_ptr<const TemplateSet> templates,
                                  std::shared_ptr<Provider> provider, LlmServiceOptions options) {
    if (!templates || !provider)
        throw std::invalid_argument("make_llm_handler needs templates and a provider");
    auto gate = std::make_shared<EmbeddingsGate>(
        options.builtin_embeddings_ttl);  // shared: every slot's copy sees one state
    auto shared_options = std::make_shared<const LlmServiceOptions>(std::move(options));
    return [templates = std::move(templates), provider = std::move(provider), gate,
            shared_options](runtime::RequestContext& context) {
        handle(context, *templates, *provider, *shared_options, *gate);
    };
}

}  // namespace glassbox::llm
