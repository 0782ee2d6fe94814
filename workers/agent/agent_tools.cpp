// The agent's tool calls: sub-requests to the RAG services, store lookups, completions.
#include "workers/agent/agent_tools.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <span>

#include "base/ascii.hpp"
#include "schema/explain_builder.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages.hpp"

namespace glassbox::agent {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

namespace {

std::string text_dump(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string string_arg(const json& args, const char* key) {
    const auto it = args.find(key);
    return it != args.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool looks_like_iri(std::string_view text) {
    return text.find("://") != std::string_view::npos || text.starts_with("urn:");
}

void fail_outcome(ToolOutcome& out, const std::string& why) {
    out.error = true;
    out.observation = "error: " + why;
}

// The terms of one iteration's store lookups and, once asked, their labels.
class TermLabels {
public:
    void note(const schema::Term& term) {
        if (index_.emplace(key_of(term), terms_.size()).second) terms_.push_back(term);
    }
    const std::vector<schema::Term>& terms() const noexcept { return terms_; }
    void set_labels(std::vector<std::string> labels) { labels_ = std::move(labels); }
    // The label of a term noted before.
    const std::string& label(const schema::Term& term) const {
        return labels_[index_.at(key_of(term))];
    }

private:
    static std::string key_of(const schema::Term& term) {
        return term.is_iri()       ? "i" + term.as_iri().value
               : term.is_literal() ? "l" + term.as_literal().value
                                   : std::string("?");
    }

    std::vector<schema::Term> terms_;
    std::map<std::string, std::size_t> index_;  // term key → position in terms_
    std::vector<std::string> labels_;
};

// The observation of a triples-query about `iri`: the facts of `found` (the triples out of it,
// then into it) whose predicate names the call's filter, as many as fit in `max_chars`.
void observe_facts(ToolOutcome& out, const std::string& iri,
                   std::span<const std::vector<schema::Triple>> found, const TermLabels& terms,
                   std::size_t max_chars) {
    const auto label = [&](const schema::Term& term) { return terms.label(term); };
    const std::string filter = normalise_name(string_arg(out.args, "predicate"));
    json obs = {{"entity", label(schema::Term(schema::Iri{iri}))}, {"iri", iri}};
    json facts = json::array();
    std::size_t omitted = 0;
    std::size_t size = text_dump(obs).size() + 64;
    for (std::size_t dir = 0; dir < 2; ++dir) {
        for (const auto& t : found[dir]) {
            const std::string pred = label(t.p);
            if (!filter.empty() && normalise_name(pred).find(filter) == std::string::npos) continue;
            json fact = {{"s", label(t.s)},
                         {"p", pred},
                         {"o", label(t.o)},
                         {"dir", dir == 0 ? "out" : "in"}};
            const schema::Term& other = dir == 0 ? t.o : t.s;
            if (other.is_iri()) fact["other"] = other.as_iri().value;
            const std::size_t fact_size = text_dump(fact).size() + 1;
            if (size + fact_size > max_chars) {
                ++omitted;
                continue;
            }
            size += fact_size;
            out.facts.push_back(
                ObservedFact{t, iri, other.is_iri() ? other.as_iri().value : std::string(),
                             dir == 0 ? label(t.o) : label(t.s),
                             label(t.s) + " " + pred + " " + label(t.o), false, label(t.s), pred});
            facts.push_back(std::move(fact));
        }
    }
    if (facts.empty() && omitted == 0) {
        fail_outcome(out,
                     "no facts about " + label(schema::Term(schema::Iri{iri})) +
                         (filter.empty() ? "" : " with a predicate naming \"" + filter + "\""));
        return;
    }
    obs["facts"] = std::move(facts);
    if (omitted) obs["omitted"] = omitted;
    out.observation = text_dump(obs);
}

// A RAG tool's confidence and the conflicts its answer reported (the FINAL's "conflicts", as
// the query router reads them). The conflicts lowered the tool's confidence by their "conflict"
// feature's factor (reasoner::lower_for_conflicts); that factor is taken back out so the agent,
// which carries the conflicts over and lowers its own confidence for them, counts them once.
void read_confidence(const json& final, ToolOutcome& out) {
    const auto stated = schema::explain::answer_confidence_of(final);
    if (!stated) return;
    out.conflicts = stated->conflicts;
    if (!stated->probability) return;
    double share = 1.0;
    for (const auto& f : stated->features)
        if (f.name == "conflict" && f.value > 0.0) share = std::min(share, f.value);
    out.confidence = std::clamp(*stated->probability / share, 0.0, 1.0);
}

// True when graph-rag's short answer is one fact's value for a question that asks for one
// thing: the edge it came from (the first citation its selections name) ends with it, and its
// completeness says no list was asked. The planner checks such a name against the documents
// (docs/agent.md); a list, or a value the synthesis composed, is not one fact's.
bool is_single_value(const schema::RagResponse& reply, const json& final) {
    if (!reply.answer || reply.answer->empty()) return false;
    const auto completeness = final.find("completeness");
    if (completeness == final.end() || !completeness->is_object()) return false;
    const auto list = completeness->find("list");
    if (list == completeness->end() || !list->is_boolean() || list->get<bool>()) return false;
    for (const auto& c : reply.citations) {
        if (std::find(reply.answer_selections.begin(), reply.answer_selections.end(),
                      c.selection) == reply.answer_selections.end())
            continue;
        return c.kind == "edge" && c.object &&
               normalise_name(*c.object) == normalise_name(*reply.answer);
    }
    return false;
}

}  // namespace

std::string normalise_name(std::string_view name) {
    std::string out;
    for (char c : name) {
        const char lower = c == '_' ? ' ' : base::ascii_lower(c);
        if (lower == ' ' && (out.empty() || out.back() == ' ')) continue;
        out.push_back(lower);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

ToolRunner::ToolRunner(runtime::RequestContext& context, const AgentConfig& config,
                       std::string collection)
    : context_(context), config_(config), collection_(std::move(collection)) {}

std::string ToolRunner::cut(std::string text) const {
    if (text.size() <= config_.max_observation_chars) return text;
    std::size_t end = config_.max_observation_chars;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    text.resize(end);
    return text + " …";
}

template <typename Query>
runtime::CallSpec ToolRunner::rag_call(const std::string& service, const std::string& question,
                                       const std::string& parent_uri) const {
    Query q;
    q.query = question;
    q.collection = collection_;
    q.parent_uri = parent_uri;
    // Asked with min_confidence 0, as the query router asks its engines: a tool that abstained
    // below its own floor would hide its value from the agent, which compares the facts with
    // the documents' answers and applies its own floor to its own answer.
    q.min_confidence = 0.0;
    return runtime::CallSpec{service, schema::encode(q), config_.call_timeout};
}

std::optional<runtime::CallSpec> ToolRunner::bus_call(const Tool& tool, const json& args,
                                                      const std::string& parent_uri) const {
    const std::string question = string_arg(args, "question");
    switch (tool.kind) {
        case ToolKind::kGraphRag:
            return rag_call<schema::GraphRagQuery>(config_.graph_rag_service, question, parent_uri);
        case ToolKind::kDocumentRag:
            return rag_call<schema::DocumentRagQuery>(config_.document_rag_service, question,
                                                      parent_uri);
        case ToolKind::kCompletion: {
            schema::LlmRequest request;
            request.template_name = config_.completion_template;
            request.variables["prompt"] = string_arg(args, "prompt");
            return runtime::CallSpec{config_.llm_service, schema::encode(request),
                                     config_.call_timeout};
        }
        case ToolKind::kTriples:
        case ToolKind::kGraphQuery:
            return std::nullopt;
    }
    return std::nullopt;
}

void ToolRunner::read_reply(const Tool& tool, const runtime::CallResult& result,
                            ToolOutcome& out) const {
    if (tool.kind == ToolKind::kCompletion) {
        auto reply = schema::decode<schema::LlmResponse>(result.final);
        if (!reply)
            return fail_outcome(out, "the llm reply does not decode: " + reply.error().message);
        out.response = reply->text;
        out.observation = cut(reply->text);
        return;
    }
    auto reply = schema::decode<schema::RagResponse>(result.final);
    if (!reply)
        return fail_outcome(out,
                            tool.name + ": the reply does not decode: " + reply.error().message);
    out.answer = reply->answer;
    out.answer_selections = reply->answer_selections;
    out.response = reply->response;
    out.sources = reply->sources;
    out.citations = reply->citations;
    read_confidence(result.final, out);
    out.explain = result.explain;
    for (auto it = result.explain.rbegin(); it != result.explain.rend(); ++it) {
        if (it->is_object() && it->contains("explain_id") && (*it)["explain_id"].is_string()) {
            out.sub_run_last_step = (*it)["explain_id"].get<std::string>();
            break;
        }
    }
    json obs = {{"answer", reply->answer.value_or("")}, {"response", std::string(reply->response)}};
    json cited = json::array();
    for (const auto& c : reply->citations) {
        cited.push_back(
            {{"n", c.n}, {"text", c.text}, {"title", c.title}, {"document", c.document}});
        if (cited.size() == 5) break;
    }
    if (!cited.empty()) obs["citations"] = std::move(cited);
    out.single_value = tool.kind == ToolKind::kGraphRag && is_single_value(*reply, result.final);
    // The observation must stay parseable: the answer text is what gets shortened.
    std::string text = text_dump(obs);
    if (text.size() > config_.max_observation_chars) {
        obs.erase("citations");
        obs["response"] = cut(reply->response.substr(0, config_.max_observation_chars / 2));
        text = text_dump(obs);
    }
    out.observation = std::move(text);
}

std::vector<ToolOutcome> ToolRunner::run(const std::vector<ToolCall>& calls,
                                         const std::vector<Tool>& tools,
                                         const std::string& parent_uri) {
    std::vector<ToolOutcome> outcomes(calls.size());
    std::vector<runtime::CallSpec> specs;
    std::vector<std::pair<std::size_t, const Tool*>> on_bus;  // outcome index, tool
    std::vector<ToolOutcome*> lookups;
    std::vector<ToolOutcome*> queries;
    for (std::size_t i = 0; i < calls.size(); ++i) {
        auto& out = outcomes[i];
        out.tool = calls[i].tool;
        out.args = calls[i].args;
        const auto tool = std::find_if(tools.begin(), tools.end(),
                                       [&](const Tool& t) { return t.name == calls[i].tool; });
        if (tool == tools.end()) {
            std::string offered;
            for (const auto& t : tools) offered += (offered.empty() ? "" : ", ") + t.name;
            fail_outcome(out,
                         "no tool \"" + calls[i].tool + "\" is offered (offered: " + offered + ")");
            continue;
        }
        if (auto problem = check_arguments(*tool, calls[i].args)) {
            fail_outcome(out, *problem);
            continue;
        }
        if (tool->kind == ToolKind::kTriples) {
            lookups.push_back(&out);
            continue;
        }
        if (tool->kind == ToolKind::kGraphQuery) {
            queries.push_back(&out);
            continue;
        }
        specs.push_back(*bus_call(*tool, calls[i].args, parent_uri));
        on_bus.emplace_back(i, &*tool);
    }
    if (!specs.empty()) {
        auto results = context_.call_all(specs);
        if (results) {
            for (std::size_t k = 0; k < on_bus.size(); ++k)
                read_reply(*on_bus[k].second, (*results)[k], outcomes[on_bus[k].first]);
        } else if (specs.size() == 1 || context_.cancelled()) {
            for (const auto& [index, tool] : on_bus)
                fail_outcome(outcomes[index], results.error().describe());
        } else {
            // call_all answers the first failure only: each call again on its own tells which
            // failed, so the others still give their observations.
            for (std::size_t k = 0; k < on_bus.size(); ++k) {
                auto one = context_.call(specs[k].service, specs[k].body, specs[k].deadline);
                if (one) {
                    read_reply(*on_bus[k].second, *one, outcomes[on_bus[k].first]);
                } else {
                    fail_outcome(outcomes[on_bus[k].first], one.error().describe());
                }
            }
        }
    }
    mark_single_values(outcomes, tools);
    if (!lookups.empty()) run_triples(std::move(lookups));
    for (auto* out : queries) run_graph_query(*out);
    return outcomes;
}

void ToolRunner::mark_single_values(std::vector<ToolOutcome>& outcomes,
                                    const std::vector<Tool>& tools) {
    const bool documents_offered = std::any_of(
        tools.begin(), tools.end(), [](const Tool& t) { return t.kind == ToolKind::kDocumentRag; });
    if (!documents_offered) return;
    for (auto& out : outcomes) {
        if (!out.single_value || out.error) continue;
        auto found = store("chunks-keyword",
                           json{{"query", string_arg(out.args, "question")}, {"limit", 1}});
        const bool documents = found && found->final.is_object() &&
                               found->final.contains("chunks") &&
                               found->final["chunks"].is_array() && !found->final["chunks"].empty();
        out.single_value = documents;
        if (!documents) continue;
        json obs = json::parse(out.observation, nullptr, false);
        if (!obs.is_object()) continue;
        obs["single_value"] = true;
        out.observation = text_dump(obs);
    }
}

base::Result<runtime::CallResult> ToolRunner::store(std::string_view op, json body) {
    body["op"] = op;
    body["collection"] = collection_;
    return context_.call(config_.store_service, body, config_.call_timeout);
}

base::Result<std::vector<std::string>> ToolRunner::resolve(const std::vector<std::string>& names,
                                                           std::vector<bool>* exact_out) {
    std::vector<std::string> iris(names.size());
    if (exact_out) exact_out->assign(names.size(), true);
    std::vector<std::string> texts;
    std::vector<std::size_t> asked;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (looks_like_iri(names[i])) {
            iris[i] = names[i];
        } else {
            texts.push_back(names[i]);
            asked.push_back(i);
        }
    }
    if (texts.empty()) return iris;
    auto embedded =
        context_.call(config_.embeddings_service, schema::encode(schema::EmbeddingsRequest{texts}),
                      config_.call_timeout);
    if (!embedded) return std::move(embedded).error();
    auto vectors = schema::decode<schema::EmbeddingsResponse>(embedded->final);
    if (!vectors || vectors->vectors.size() != texts.size())
        return make_error(ErrorType::kUpstreamError,
                          "the embeddings reply does not match the names asked");
    auto matched =
        store("entities-batch", schema::encode(schema::GraphEmbeddingsQuery{
                                    vectors->vectors, config_.resolve_candidates, collection_}));
    if (!matched) return std::move(matched).error();
    auto matches = schema::decode<schema::GraphEmbeddingsBatchResponse>(matched->final);
    if (!matches || matches->results.size() != texts.size())
        return make_error(ErrorType::kUpstreamError,
                          "the store's entity matches do not match the names asked");
    // The labels of every candidate: a candidate whose label is the name itself wins over a
    // closer vector (hashing vectors of similar names are close).
    std::vector<schema::Term> terms;
    for (const auto& list : matches->results)
        for (const auto& m : list) terms.push_back(m.entity);
    auto labelled = labels_of(terms);
    if (!labelled) return std::move(labelled).error();
    const std::vector<std::string>& labels = *labelled;
    std::size_t t = 0;  // the first label of this name's candidates
    for (std::size_t k = 0; k < texts.size(); ++k) {
        const auto& list = matches->results[k];
        const std::string wanted = normalise_name(texts[k]);
        std::string nearest;
        std::string exact;
        for (std::size_t j = 0; j < list.size(); ++j) {
            if (!list[j].entity.is_iri()) continue;
            const std::string& iri = list[j].entity.as_iri().value;
            if (nearest.empty()) nearest = iri;
            if (exact.empty() && normalise_name(labels[t + j]) == wanted) exact = iri;
        }
        t += list.size();
        iris[asked[k]] = exact.empty() ? nearest : exact;
        if (exact_out) (*exact_out)[asked[k]] = !exact.empty();
    }
    return iris;
}

base::Result<std::vector<std::string>> ToolRunner::labels_of(
    const std::vector<schema::Term>& terms) {
    if (terms.empty()) return std::vector<std::string>{};
    auto labelled = store("labels", schema::encode(schema::LabelsRequest{collection_, terms}));
    if (!labelled) return std::move(labelled).error();
    auto decoded = schema::decode<schema::LabelsResponse>(labelled->final);
    if (!decoded || decoded->labels.size() != terms.size())
        return make_error(ErrorType::kUpstreamError,
                          "the store's labels do not match the terms asked");
    return std::move(decoded->labels);
}

base::Result<std::vector<std::vector<schema::Triple>>> ToolRunner::triples_around(
    const std::vector<std::string>& iris) {
    std::vector<schema::TriplePattern> patterns;
    for (const auto& iri : iris) {
        if (iri.empty()) continue;
        patterns.push_back(schema::TriplePattern{schema::Term(schema::Iri{iri}), std::nullopt,
                                                 std::nullopt, std::nullopt});
        patterns.push_back(schema::TriplePattern{std::nullopt, std::nullopt,
                                                 schema::Term(schema::Iri{iri}), std::nullopt});
    }
    if (patterns.empty()) return std::vector<std::vector<schema::Triple>>{};
    auto reply = store("triples-batch", schema::encode(schema::TriplesQueryBatch{
                                            patterns, config_.triples_limit, collection_}));
    if (!reply) return std::move(reply).error();
    auto decoded = schema::decode<schema::TriplesBatchResponse>(reply->final);
    if (!decoded || decoded->results.size() != patterns.size())
        return make_error(ErrorType::kUpstreamError,
                          "the store's triples do not match the patterns asked");
    return std::move(decoded->results);
}

void ToolRunner::run_triples(std::vector<ToolOutcome*> outcomes) {
    const auto fail_all = [&](const base::Error& error) {
        for (auto* out : outcomes) fail_outcome(*out, error.describe());
    };
    std::vector<std::string> names;
    names.reserve(outcomes.size());
    for (auto* out : outcomes) names.push_back(string_arg(out->args, "subject"));
    auto iris = resolve(names);
    if (!iris) return fail_all(iris.error());
    auto found = triples_around(*iris);
    if (!found) return fail_all(found.error());

    // One labels request for every term met.
    TermLabels terms;
    for (const auto& iri : *iris)
        if (!iri.empty()) terms.note(schema::Term(schema::Iri{iri}));
    for (const auto& list : *found)
        for (const auto& t : list) {
            terms.note(t.s);
            terms.note(t.p);
            terms.note(t.o);
        }
    auto labels = labels_of(terms.terms());
    if (!labels) return fail_all(labels.error());
    terms.set_labels(std::move(*labels));

    std::size_t p = 0;  // the outcome's first pattern
    for (std::size_t k = 0; k < outcomes.size(); ++k) {
        auto& out = *outcomes[k];
        const std::string& iri = (*iris)[k];
        if (iri.empty()) {
            fail_outcome(out, "no entity of the knowledge graph matches \"" + names[k] + "\"");
            continue;
        }
        observe_facts(out, iri, std::span(found->data() + p, 2), terms,
                      config_.max_observation_chars);
        p += 2;
    }
}

base::Result<std::vector<std::vector<schema::FactSource>>> ToolRunner::fact_sources(
    const std::vector<schema::Triple>& triples) {
    if (triples.empty()) return std::vector<std::vector<schema::FactSource>>{};
    auto reply =
        store("fact-sources", schema::encode(schema::FactSourcesRequest{collection_, triples}));
    if (!reply) return std::move(reply).error();
    auto decoded = schema::decode<schema::FactSourcesResponse>(reply->final);
    if (!decoded)
        return make_error(ErrorType::kUpstreamError,
                          "the store's fact sources do not decode: " + decoded.error().message);
    if (decoded->sources.size() != triples.size())
        return make_error(ErrorType::kUpstreamError,
                          "the store's fact sources do not match the facts asked");
    return std::move(decoded->sources);
}

}  // namespace glassbox::agent
