// The answer to a question in its documented schema, built from the query router's FINAL.
#include "gateway/query_answer.hpp"

#include <nlohmann/json.hpp>

#include "gateway/mcp/argument_check.hpp"
#include "gateway/path_redaction.hpp"

namespace glassbox::gateway {

using nlohmann::json;

namespace {

json member(const json& object, const char* key, json fallback) {
    if (!object.is_object()) return fallback;
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? fallback : *it;
}

json string_or_null(const json& object, const char* key) {
    const json value = member(object, key, nullptr);
    return value.is_string() ? value : json(nullptr);
}

// A citation as the engines write it (docs/rag.md §1), less the prompt's own evidence label.
json citation(const json& c) {
    json out{{"n", member(c, "n", nullptr)},
             {"kind", member(c, "kind", nullptr)},
             {"text", member(c, "text", "")},
             {"title", member(c, "title", "")},
             {"document", member(c, "document", "")},
             {"chunk", member(c, "chunk", "")},
             {"char_offset", member(c, "char_offset", nullptr)},
             {"char_end", member(c, "char_end", nullptr)},
             {"tier", member(c, "tier", nullptr)},
             {"spans", member(c, "spans", json::array())},
             {"selection", member(c, "selection", "")}};
    // An edge's fact in parts (its labels), and freshness (docs/knowledge.md §3), when the
    // engine said them.
    for (const char* key :
         {"subject", "predicate", "object", "loaded_at", "date", "max_age", "stale"})
        if (c.contains(key)) out[key] = c[key];
    return out;
}

json citations_of(const json& final) {
    json out = json::array();
    const json list = member(final, "citations", json::array());
    if (list.is_array())
        for (const auto& c : list)
            if (c.is_object()) out.push_back(citation(c));
    return out;
}

// Each distinct source with its tier: the provenance's list (docs/query.md §1), else the
// engine's plain list of source URIs.
json sources_of(const json& final) {
    json out = json::array();
    const json provenance = member(final, "provenance", json::object());
    const json listed = member(provenance, "sources", nullptr);
    if (listed.is_array()) {
        for (const auto& s : listed) {
            if (!s.is_object()) continue;
            json source{{"source", member(s, "source", "")},
                        {"tier", member(s, "tier", nullptr)},
                        {"engine", member(s, "engine", nullptr)}};
            if (s.contains("fusion_score")) source["fusion_score"] = s["fusion_score"];
            for (const char* key : {"loaded_at", "date", "stale"})
                if (s.contains(key)) source[key] = s[key];
            out.push_back(std::move(source));
        }
        return out;
    }
    const json plain = member(final, "sources", json::array());
    if (plain.is_array())
        for (const auto& s : plain)
            if (s.is_string())
                out.push_back(json{{"source", s},
                                   {"tier", nullptr},
                                   {"engine", member(final, "engine", nullptr)}});
    return out;
}

json provenance_of(const json& final) {
    const json provenance = member(final, "provenance", nullptr);
    if (!provenance.is_object()) return nullptr;
    return json{{"aggregate_tier", member(provenance, "aggregate_tier", nullptr)},
                {"derivation", member(provenance, "derivation", json::array())}};
}

// The runs in the answer's own words: a run's trace is `trace_id`, the question it was asked
// (a rephrasing, on an escalation) `question`.
json runs_of(const json& final) {
    json out = json::array();
    const json runs = member(final, "runs", json::array());
    if (!runs.is_array()) return out;
    for (const auto& run : runs) {
        if (!run.is_object()) continue;
        json item = json::object();
        for (const auto& [key, value] : run.items()) {
            if (key == "session") {
                item["trace_id"] = value;
            } else if (key == "query") {
                item["question"] = value;
            } else {
                item[key] = value;
            }
        }
        out.push_back(std::move(item));
    }
    return out;
}

json usage_of(const json& final) {
    return json{{"input_tokens", member(final, "in_token", 0)},
                {"output_tokens", member(final, "out_token", 0)}};
}

}  // namespace

json query_answer(const json& final, const AnswerContext& context) {
    json answer{{"trace_id", member(final, "session", "")},
                {"question", context.question},
                {"collection", context.collection},
                {"answer", member(final, "response", "")},
                {"short_answer", string_or_null(final, "answer")},
                {"citations", citations_of(final)},
                {"sources", sources_of(final)},
                {"answered_by", string_or_null(final, "engine")},
                {"route", member(final, "route", nullptr)},
                {"escalations", member(final, "escalations", json::array())},
                {"runs", runs_of(final)},
                {"relevance", member(final, "relevance", nullptr)},
                {"confidence", member(final, "confidence", nullptr)},
                {"confidence_words", string_or_null(final, "confidence_words")},
                {"calibrator", string_or_null(final, "calibrator")},
                {"abstained", member(final, "abstained", false)},
                {"evidence", member(final, "evidence", json::array())},
                {"conflicts", member(final, "conflicts", json::array())},
                {"completeness", member(final, "completeness", nullptr)},
                {"provenance", provenance_of(final)},
                {"model", string_or_null(final, "model")},
                {"usage", usage_of(final)},
                {"duration_ms", context.duration.count()},
                {"termination_reason", member(final, "termination", "answered")}};
    if (!context.request_id.empty()) answer["request_id"] = context.request_id;
    for (const char* key : {"resolved_question", "resolved_reference", "iterations"})
        if (const json value = member(final, key, nullptr); !value.is_null()) answer[key] = value;
    // What a worker wrote in its own words may name a file of its host (an engine's error).
    for (const char* key : {"escalations", "runs", "resolved_reference"})
        if (answer.contains(key)) ServerPaths::instance().redact_json(answer[key]);
    return answer;
}

base::Result<void> take_question_alias(json& body) {
    if (auto why = mcp::take_alias(body, kQuestionField, kQuestionAlias))
        return base::make_error(base::ErrorType::kInvalidRequest, *why);
    return {};
}

}  // namespace glassbox::gateway
