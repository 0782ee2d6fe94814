// The store service's per-request bounds: each op's request checked against them, with errors
// that name the bound and both values.
#include "workers/store/store_bounds.hpp"

#include <algorithm>
#include <string>

#include "workers/store/graph_store.hpp"

namespace glassbox::store {

using base::ErrorType;
using base::make_error;
using base::Result;

std::uint32_t retrieval_limit(std::uint32_t requested) noexcept {
    if (requested == 0) return kDefaultRetrievalLimit;
    return std::min(requested, kMaxRetrievalLimit);
}

std::uint32_t match_limit(std::uint32_t requested) noexcept {
    return requested == 0 || requested > kMaxMatchLimit ? kMaxMatchLimit : requested;
}

namespace {

std::string with_commas(std::uint64_t n) {
    // Built a character at a time: string::insert here trips GCC 12's -Wrestrict at -O2.
    const std::string digits = std::to_string(n);
    std::string out;
    out.reserve(digits.size() + digits.size() / 3);
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

// "<op>: N <what> passes the bound of M (<name>)".
Result<void> at_most(std::string_view op, std::string_view what, std::uint64_t count,
                     std::uint64_t bound, std::string_view name) {
    if (count <= bound) return {};
    return make_error(ErrorType::kInvalidRequest,
                      std::string(op) + ": " + with_commas(count) + " " + std::string(what) +
                          " pass the bound of " + with_commas(bound) + " (" + std::string(name) +
                          "); split the request");
}

// items × limit against max_rows; `limit` is the one the store applies.
Result<void> rows_at_most(std::string_view op, std::string_view items, std::uint64_t count,
                          std::uint32_t limit, std::uint32_t requested, const StoreBounds& bounds) {
    const std::uint64_t rows = count * limit;
    if (rows <= bounds.max_rows) return {};
    std::string limit_text = "limit " + with_commas(limit);
    if (requested != limit) limit_text += " (asked " + with_commas(requested) + ")";
    return make_error(ErrorType::kInvalidRequest,
                      std::string(op) + ": " + with_commas(count) + " " + std::string(items) +
                          " × " + limit_text + " = " + with_commas(rows) +
                          " rows pass the bound of " + with_commas(bounds.max_rows) +
                          " (max_rows: " + std::string(items) +
                          " × limit per request); ask with a lower "
                          "limit or split the request");
}

}  // namespace

Result<void> check_request(const schema::TriplesQueryBatch& q, const StoreBounds& bounds) {
    if (auto r = at_most("triples-batch", "patterns", q.patterns.size(), bounds.max_patterns,
                         "max_patterns");
        !r) {
        return r;
    }
    return rows_at_most("triples-batch", "patterns", q.patterns.size(), match_limit(q.limit),
                        q.limit, bounds);
}

Result<void> check_request(const schema::GraphEmbeddingsQuery& q, std::string_view op,
                           bool per_vector, const StoreBounds& bounds) {
    return check_vector_query(op, q.vectors.size(), q.limit, per_vector, bounds);
}

Result<void> check_vector_query(std::string_view op, std::size_t vectors, std::uint32_t limit,
                                bool per_vector, const StoreBounds& bounds) {
    if (auto r = at_most(op, "vectors", vectors, bounds.max_vectors, "max_vectors"); !r) return r;
    if (!per_vector) return {};
    return rows_at_most(op, "vectors", vectors, retrieval_limit(limit), limit, bounds);
}

Result<void> check_request(const schema::DocumentEmbeddingsQuery& q, const StoreBounds& bounds) {
    return at_most("chunks-vector", "vectors", q.vectors.size(), bounds.max_vectors, "max_vectors");
}

Result<void> check_request(const schema::ChunkKeywordQuery& q, const StoreBounds& bounds) {
    return at_most("chunks-keyword", "bytes of query", q.query.size(), bounds.max_query_bytes,
                   "max_query_bytes");
}

Result<void> check_request(const schema::HybridChunkQuery& q, const StoreBounds& bounds) {
    if (auto r = at_most("chunks-hybrid", "vectors", q.vectors.size(), bounds.max_vectors,
                         "max_vectors");
        !r) {
        return r;
    }
    return at_most("chunks-hybrid", "bytes of query", q.query.size(), bounds.max_query_bytes,
                   "max_query_bytes");
}

Result<void> check_request(const schema::ChunkFetchRequest& q, const StoreBounds& bounds) {
    return at_most("chunks-fetch", "chunk ids", q.chunk_ids.size(), bounds.max_chunk_ids,
                   "max_chunk_ids");
}

Result<void> check_request(const schema::FactSourcesRequest& q, const StoreBounds& bounds) {
    return at_most("fact-sources", "triples", q.triples.size(), bounds.max_facts, "max_facts");
}

Result<void> check_request(const schema::LabelsRequest& q, const StoreBounds& bounds) {
    return at_most("labels", "terms", q.terms.size(), bounds.max_terms, "max_terms");
}

Result<void> check_request(const schema::LoadDocumentsRequest& q, const StoreBounds& bounds) {
    return at_most("load-documents", "documents", q.documents.size(), bounds.max_documents,
                   "max_documents");
}

base::Error reply_too_large(std::string_view op, std::size_t bound, std::string_view bound_name,
                            std::string_view done, std::string_view hint) {
    return base::Error{ErrorType::kInvalidRequest,
                       std::string(op) + ": the reply would pass " + with_commas(bound) +
                           " bytes (" + std::string(bound_name) + ")" +
                           (done.empty() ? "" : ", " + std::string(done)) + "; " +
                           std::string(hint)};
}

}  // namespace glassbox::store
