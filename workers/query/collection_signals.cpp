// Label look-ups and keyword matching for routing.
#include "workers/query/collection_signals.hpp"

#include <optional>

#include "schema/messages.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::query {

using nlohmann::json;

std::string ask_collection(runtime::RequestContext& context, const std::string& store_service,
                           const std::string& collection, std::chrono::milliseconds timeout,
                           QuestionFeatures& features) {
    schema::TriplesQueryBatch labels;
    labels.collection = collection;
    labels.limit = 1;
    for (const auto& span : features.spans) {
        schema::TriplePattern pattern;
        pattern.p = schema::iri(std::string(schema::vocab::kRdfsLabel));
        pattern.o = schema::literal(span.text);
        pattern.g = "";  // the default graph: the knowledge, not the traces
        labels.patterns.push_back(std::move(pattern));
    }
    json label_body = schema::encode(labels);
    label_body["op"] = "triples-batch";
    json keyword_body = schema::encode(schema::ChunkKeywordQuery{features.question, 1, collection});
    keyword_body["op"] = "chunks-keyword";

    std::vector<runtime::CallSpec> calls;
    calls.push_back(runtime::CallSpec{store_service, std::move(keyword_body), timeout});
    if (!labels.patterns.empty())
        calls.push_back(runtime::CallSpec{store_service, std::move(label_body), timeout});
    // Both at once; when one fails (a collection with a graph but no documents may answer the
    // keyword query NotFound) each is asked alone, so the other still informs routing.
    std::vector<std::optional<nlohmann::json>> finals(calls.size());
    std::string why;
    if (auto together = context.call_all(calls)) {
        for (std::size_t i = 0; i < calls.size(); ++i) finals[i] = std::move((*together)[i].final);
    } else {
        for (std::size_t i = 0; i < calls.size(); ++i) {
            auto alone = context.call(calls[i].service, calls[i].body, calls[i].deadline);
            if (alone) {
                finals[i] = std::move(alone->final);
            } else {
                why += (why.empty() ? "" : "; ") + alone.error().describe();
            }
        }
    }
    if (!finals[0] && (finals.size() < 2 || !finals[1]))
        return "collection signals unknown: " + why;

    features.signals_known = true;
    if (finals[0]) {
        if (auto keyword = schema::decode<schema::ChunkMatchResponse>(*finals[0]);
            keyword && !keyword->chunks.empty())
            features.document_keyword = keyword->chunks.front().score;
    }
    if (finals.size() > 1 && finals[1]) {
        if (auto found = schema::decode<schema::TriplesBatchResponse>(*finals[1]); found) {
            for (std::size_t i = 0; i < found->results.size() && i < features.spans.size(); ++i) {
                if (!found->results[i].empty()) features.graph_entities += features.spans[i].weight;
            }
        }
    }
    return why;
}

}  // namespace glassbox::query
