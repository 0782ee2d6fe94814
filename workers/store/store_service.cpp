// The `store` service: decodes each operation, runs it on the collection's knowledge base under
// its lock, and answers with the typed reply; embedding for indexing goes through the bus.
#include "workers/store/store_service.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <span>
#include <unordered_map>

#include "base/log.hpp"
#include "base/time_format.hpp"
#include "schema/explain_builder.hpp"
#include "schema/freshness.hpp"
#include "schema/indexed_quads.hpp"
#include "schema/json_cursor.hpp"
#include "schema/json_fast.hpp"
#include "schema/messages.hpp"
#include "schema/nquads.hpp"
#include "schema/store_requests_text.hpp"
#include "schema/untrusted_json.hpp"
#include "schema/vector_query_text.hpp"
#include "workers/store/change_ops.hpp"
#include "workers/store/collection_catalog.hpp"
#include "workers/store/graph_aggregate.hpp"
#include "workers/store/inline_reads.hpp"
#include "workers/store/source_freshness.hpp"

namespace glassbox::store {

using base::Error;
using base::ErrorType;
using base::make_error;
using base::Result;
using nlohmann::json;

namespace {

// Keys and punctuation around a source of fact-sources, in bytes.
constexpr std::size_t kSourceWireOverhead = 80;
// Reciprocal rank fusion constant (Cormack et al. 2009): damps the weight of the first ranks.
constexpr double kRrfK = 60.0;

schema::FactSource to_wire(SourceRecord&& record) {
    schema::FactSource out;
    out.source = std::move(record.uri);
    out.kind = std::string(to_string(record.kind));
    if (!record.document_uri.empty()) out.document = std::move(record.document_uri);
    out.tier = record.tier;
    out.loaded_at = std::move(record.loaded_at);
    if (!record.source_date.empty()) out.date = std::move(record.source_date);
    return out;
}

// Best score per key over the matches of several query vectors, then the top `limit`. A key's
// score is its first one raised by each greater one, in the lists' order (stable_sort keeps it):
// what a map from key to score would hold, without a node per match.
std::vector<VectorMatch> merge_best(std::span<const std::vector<VectorMatch>> lists,
                                    std::uint32_t limit) {
    std::vector<VectorMatch> merged;
    std::size_t count = 0;
    for (const auto& found : lists) count += found.size();
    merged.reserve(count);
    for (const auto& found : lists) merged.insert(merged.end(), found.begin(), found.end());
    std::stable_sort(merged.begin(), merged.end(),
                     [](const VectorMatch& a, const VectorMatch& b) { return a.key < b.key; });
    std::size_t kept = 0;
    for (const auto& match : merged) {
        if (kept != 0 && merged[kept - 1].key == match.key) {
            merged[kept - 1].score = std::max(merged[kept - 1].score, match.score);
        } else {
            merged[kept++] = match;
        }
    }
    merged.resize(kept);
    std::sort(merged.begin(), merged.end(), [](const VectorMatch& a, const VectorMatch& b) {
        return a.score != b.score ? a.score > b.score : a.key < b.key;
    });
    if (merged.size() > limit) merged.resize(limit);
    return merged;
}

// Best score per key over several query vectors (one search of the index for all), then the
// top `limit`.
Result<std::vector<VectorMatch>> search_all(VectorIndex& index,
                                            std::span<const std::vector<double>> vectors,
                                            std::uint32_t limit) {
    auto found = index.search_each(vectors, limit);
    if (!found) return std::move(found).error();
    return merge_best(*found, limit);
}

}  // namespace

StoreService::StoreService(StoreServiceConfig config)
    : config_(std::move(config)), bases_(config_.home, config_.postgres_dsn) {}

runtime::Handler make_store_handler(std::shared_ptr<StoreService> service) {
    return [service](runtime::RequestContext& ctx) {
        const LongRequest marked(ctx.body_text());  // reads run inline only while none is
        service->handle(ctx);
    };
}

namespace {

// A query of entities or entities-batch, however its body was read: its vectors are views of
// the decoded body.
struct VectorQuery {
    const std::string& collection;
    std::span<const std::span<const double>> vectors;
    std::uint32_t limit = 0;
};

// Doubles a worker thread's vector buffer keeps between requests (512 KiB).
constexpr std::size_t kKeptVectorValues = std::size_t{64} * 1024;

// What a worker thread reuses from one vector query read from text to the next.
struct VectorQueryScratch {
    schema::VectorQueryText query;
    std::vector<std::span<const double>> vectors;
};

// The ops whose bodies are read from their text: graph RAG's reads and `glassbox load`'s writes.
constexpr std::array kTextOps{kOpTriplesBatch, kOpEntitiesBatch, kOpFactSources,
                              kOpLabels,       kOpEntities,      kOpLoadTriples};

// The first op of kTextOps a body names as `glassbox` clients write it ("op":"NAME" without
// spaces) in its first KiB, or empty: the hint reads_body_as_text goes by; the reader of the text
// decides.
std::string_view text_op(std::string_view body) noexcept {
    const std::string_view head = body.substr(0, 1024);
    for (auto at = head.find("\"op\":\""); at != std::string_view::npos;
         at = head.find("\"op\":\"", at + 1)) {
        const std::string_view rest = head.substr(at + 6);
        for (const std::string_view op : kTextOps) {
            if (rest.size() > op.size() && rest.starts_with(op) && rest[op.size()] == '"')
                return op;
        }
    }
    return {};
}

// One request's work; `kb` is locked by the caller around each store access.
class Operation {
public:
    Operation(runtime::RequestContext& ctx, KnowledgeBases& bases, const StoreServiceConfig& config)
        : ctx_(ctx), bases_(bases), config_(config) {}

    void run() {
        if (ctx_.body().is_null() && !ctx_.body_text().empty()) return run_text(ctx_.body_text());
        run_tree(ctx_.body());
    }

    // Whether the op may have changed what a collection states (the SPARQL mirror looks then).
    bool writes() const {
        return op_ == kOpLoadTriples || op_ == kOpLoadCommit || op_ == kOpLoadDocuments ||
               op_ == kOpCollectionDelete || is_forget_op(op_);
    }

private:
    // A body the runtime left as text (reads_body_as_text): a load-triples request, a vector
    // query and graph RAG's other reads are read where they stand; anything else the cursors do
    // not take is parsed as the runtime would.
    void run_text(std::string_view text) {
        const std::string_view op = text_op(text);
        if (op == kOpEntitiesBatch || op == kOpEntities) {
            if (auto reply = entities_text(text)) return answer(std::move(*reply));
        } else if (op == kOpTriplesBatch || op == kOpFactSources || op == kOpLabels) {
            if (read_text(text, op)) return;
        } else if (auto reply = load_triples_text(text)) {
            op_ = kOpLoadTriples;
            if (!*reply) return answer(std::move(*reply).error());
            return answer(schema::dump(**reply));
        }
        auto parsed = runtime::parse_request_body(text);
        if (!parsed) return fail(std::move(parsed).error());
        tree_ = std::move(parsed).value();
        run_tree(tree_);
    }

    void run_tree(const json& body) {
        if (!body.is_object())
            return fail(make_error(ErrorType::kInvalidRequest, "the body must be a JSON object"));
        const auto op_field = body.find("op");
        if (op_field == body.end() || !op_field->is_string()) {
            return fail(make_error(ErrorType::kInvalidRequest,
                                   "the body needs \"op\": one of " + op_names()));
        }
        const std::string op = op_field->get<std::string>();
        op_ = op;
        Result<json> reply = make_error(ErrorType::kInvalidRequest,
                                        "unknown op \"" + op + "\"; expected one of " + op_names());
        if (op == kOpTriplesBatch) return answer(triples_batch(body));
        if (op == kOpEntities) return answer(entities_tree(body, false));
        if (op == kOpEntitiesBatch) return answer(entities_tree(body, true));
        if (op == kOpFactSources) return answer(fact_sources(body));
        if (op == kOpLabels) return answer(labels(body));
        if (op == kOpTriples)
            reply = triples(body);
        else if (op == kOpChunksVector)
            reply = chunks_vector(body);
        else if (op == kOpChunksKeyword)
            reply = chunks_keyword(body);
        else if (op == kOpChunksHybrid)
            reply = chunks_hybrid(body);
        else if (op == kOpChunksFetch)
            reply = chunks_fetch(body);
        else if (op == kOpStats)
            reply = stats(body);
        else if (op == kOpLoadTriples)
            reply = load_triples(body);
        else if (op == kOpLoadDocuments)
            reply = load_documents(body);
        else if (op == kOpIndex)
            reply = index(body);
        else if (op == kOpLoadCommit)
            reply = load_commit(body);
        else if (op == kOpLoadAbort)
            reply = load_abort(body);
        else if (op == kOpCollections)
            reply = collections();
        else if (op == kOpCollectionDelete)
            reply = collection_delete(body);
        else if (op == kOpCollectionSet)
            reply = collection_set(body);
        else if (is_forget_op(op))
            reply = run_forget(ctx_, bases_, op, body);
        else if (op == kOpAggregate || op == kOpPredicates)
            reply = graph_query_op(bases_, op, body, [this] { return ctx_.cancelled(); });
        if (!reply) return answer(std::move(reply).error());
        answer(schema::dump(*reply));
    }

    static std::string op_names() {
        return "triples, triples-batch, entities, entities-batch, chunks-vector, chunks-keyword, "
               "chunks-hybrid, chunks-fetch, "
               "fact-sources, labels, stats, load-triples, load-documents, index, load-commit, "
               "load-abort, collections, collection-delete, collection-set, aggregate, predicates, "
               "forget-source, forget-fact, forget-document";
    }

    void fail(const Error& error) { (void)ctx_.fail(error); }

    // Ends the request with the reply's wire text (the hot query ops write it without a JSON
    // tree) or its error, unless the op already ended it.
    // No reply leaves above 1.5 × max_reply_bytes (12 MiB by default, under the bus's 16 MiB):
    // the ops estimate their reply against max_reply_bytes before building it, and this catches
    // what the estimate missed (escapes).
    void answer(Result<std::string> reply) {
        if (ctx_.finished()) return;
        if (!reply) return fail(reply.error());
        const std::size_t hard =
            config_.bounds.max_reply_bytes + config_.bounds.max_reply_bytes / 2;
        if (reply->size() > hard) {
            return fail(reply_too_large(op_, hard, "1.5 × max_reply_bytes",
                                        "it came to " + std::to_string(reply->size()) + " bytes",
                                        "ask for less (a lower limit, fewer items)"));
        }
        (void)ctx_.reply_text(std::move(reply).value());
    }

    // A byte budget for matching, stopped by a cancelled or expired request.
    MatchBudget match_budget(std::size_t bytes) {
        MatchBudget budget;
        budget.bytes_left = bytes;
        budget.should_stop = [this] { return ctx_.cancelled(); };
        return budget;
    }

    // What every query op holds while it reads: the collection's lock and one read transaction
    // (one snapshot, one SQLite read lock for all its statements).
    struct Reading {
        Reading(std::unique_lock<std::mutex> held, KnowledgeBase& kb)
            : lock(std::move(held)), snapshot(kb.db()) {}
        std::unique_lock<std::mutex> lock;
        storage::sql::ReadScope snapshot;
    };

    // kNotFound when the collection was deleted since the request got hold of it.
    static Result<std::unique_ptr<Reading>> read(KnowledgeBase& kb) {
        auto held = kb.lock();
        if (!held) return std::move(held).error();
        return std::make_unique<Reading>(std::move(held).value(), kb);
    }

    Result<std::shared_ptr<KnowledgeBase>> base(const std::string& collection, bool create) {
        return bases_.get(collection, create);
    }

    // What a read op starts from: its request, decoded and within the bounds, the collection's
    // knowledge base (never created by a read) and the Reading held on it.
    template <typename Request>
    struct ReadOp {
        Request q;
        std::shared_ptr<KnowledgeBase> kb;
        std::unique_ptr<Reading> reading;  // last: released before the knowledge base
    };

    template <typename Request>
    Result<ReadOp<Request>> begin_read(const json& body) {
        auto q = schema::decode<Request>(body);
        if (!q) return std::move(q).error();
        return begin_read(std::move(q).value());
    }

    template <typename Request>
    Result<ReadOp<Request>> begin_read(Request q) {
        if (auto r = check_request(q, config_.bounds); !r) return r.error();
        auto kb = base(q.collection, false);
        if (!kb) return std::move(kb).error();
        auto reading = read(**kb);
        if (!reading) return std::move(reading).error();
        return ReadOp<Request>{std::move(q), std::move(kb).value(), std::move(reading).value()};
    }

    // triples-batch, fact-sources or labels (`op`) from the body's text, answered. False, nothing
    // answered, for text the readers do not take: the tree's way.
    bool read_text(std::string_view text, std::string_view op) {
        if (op == kOpTriplesBatch) {
            schema::TriplesQueryBatch q;
            if (!schema::read_triples_batch(text, q)) return false;
            op_ = op;
            answer(triples_batch(q));
        } else if (op == kOpFactSources) {
            schema::FactSourcesRequest q;
            if (!schema::read_fact_sources(text, q)) return false;
            op_ = op;
            answer(fact_sources(std::move(q)));
        } else {
            schema::LabelsRequest q;
            if (!schema::read_labels_request(text, q)) return false;
            op_ = op;
            answer(labels(std::move(q)));
        }
        return true;
    }

    Result<json> triples(const json& body) {
        auto q = schema::decode<schema::TriplesQuery>(body);
        if (!q) return std::move(q).error();
        auto kb = base(q->collection, false);
        if (!kb) return std::move(kb).error();
        schema::TriplePattern pattern{q->s, q->p, q->o, q->g};
        std::vector<schema::Triple> found;
        auto budget = match_budget(config_.bounds.max_stream_bytes);
        {
            auto reading = read(**kb);
            if (!reading) return std::move(reading).error();
            auto matched = (*kb)->graph().match(pattern, q->limit, &budget);
            if (!matched) return std::move(matched).error();
            found = std::move(matched).value();
        }
        if (budget.stopped) return ctx_.cancellation_error();
        if (budget.over_bytes) {
            return reply_too_large(kOpTriples, config_.bounds.max_stream_bytes, "max_stream_bytes",
                                   "after " + std::to_string(found.size()) + " triples",
                                   "ask with a lower limit or a narrower pattern");
        }
        // Large answers go out in batches (stream_batch triples or max_reply_bytes, whichever
        // comes first), so neither side holds one huge message.
        std::size_t sent = 0;
        for (;;) {
            std::size_t end = sent;
            std::size_t bytes = 0;
            while (end < found.size() && end - sent < config_.stream_batch &&
                   (end == sent ||
                    bytes + triple_wire_bytes(found[end]) <= config_.bounds.max_reply_bytes)) {
                bytes += triple_wire_bytes(found[end]);
                ++end;
            }
            if (end == found.size()) break;
            if (ctx_.cancelled()) return ctx_.cancellation_error();
            std::vector<schema::Triple> part(found.begin() + static_cast<std::ptrdiff_t>(sent),
                                             found.begin() + static_cast<std::ptrdiff_t>(end));
            if (auto r =
                    ctx_.send_partial(schema::encode(schema::TriplesResponse{std::move(part)}));
                !r) {
                return r.error();
            }
            sent = end;
        }
        std::vector<schema::Triple> rest(found.begin() + static_cast<std::ptrdiff_t>(sent),
                                         found.end());
        json reply = schema::encode(schema::TriplesResponse{std::move(rest)});
        reply["count"] = found.size();
        return reply;
    }

    Result<std::string> triples_batch(const json& body) {
        auto q = schema::decode<schema::TriplesQueryBatch>(body);
        if (!q) return std::move(q).error();
        return triples_batch(*q);
    }

    Result<std::string> triples_batch(const schema::TriplesQueryBatch& q) {
        if (auto r = check_request(q, config_.bounds); !r) return r.error();
        auto kb = base(q.collection, false);
        if (!kb) return std::move(kb).error();
        schema::TriplesBatchResponse reply;
        auto budget = match_budget(config_.bounds.max_reply_bytes);
        std::vector<std::vector<std::int64_t>> ids;
        // `rows`: each pattern's first rows (their ids too: the labels are read for those alone)
        // and its count of matches up to the limit.
        std::optional<GraphStore::FirstRows> first_rows;
        if (q.rows) first_rows.emplace().rows = *q.rows;
        {
            auto reading = read(**kb);
            if (!reading) return std::move(reading).error();
            auto matched =
                (*kb)->graph().match_batch(q.patterns, q.limit, &budget, q.labels ? &ids : nullptr,
                                           first_rows ? &*first_rows : nullptr);
            if (!matched) return std::move(matched).error();
            reply.results = std::move(matched).value();
            if (first_rows) reply.counts = std::move(first_rows->counts);
            if (q.labels && !budget.exhausted()) {
                auto labels =
                    labels_of_results((*kb)->graph(), reply.results, ids, budget.bytes_left);
                if (!labels) return std::move(labels).error();
                reply.labels = std::move(labels).value();
            }
        }
        if (budget.stopped) return ctx_.cancellation_error();
        if (budget.over_bytes) {
            return reply_too_large(kOpTriplesBatch, config_.bounds.max_reply_bytes,
                                   "max_reply_bytes",
                                   "reached at pattern " + std::to_string(reply.results.size()) +
                                       " of " + std::to_string(q.patterns.size()),
                                   "ask with a lower limit or fewer patterns per request");
        }
        return schema::encode_text(reply);
    }

    // triples-batch's labels: three per triple of each result (subject, predicate, object), from
    // the ids the match read, within the bytes the triples left of the reply.
    static Result<std::vector<std::vector<std::string>>> labels_of_results(
        GraphStore& graph, const std::vector<std::vector<schema::Triple>>& results,
        const std::vector<std::vector<std::int64_t>>& ids, std::size_t max_bytes) {
        std::vector<std::int64_t> all_ids;
        std::vector<const schema::Term*> terms;
        for (std::size_t i = 0; i < results.size(); ++i) {
            all_ids.insert(all_ids.end(), ids[i].begin(), ids[i].end());
            for (const auto& t : results[i]) terms.insert(terms.end(), {&t.s, &t.p, &t.o});
        }
        auto labels = graph.labels_of_stored(all_ids, terms, kOpTriplesBatch, max_bytes);
        if (!labels) return std::move(labels).error();
        std::vector<std::vector<std::string>> out(results.size());
        auto next = labels->begin();
        for (std::size_t i = 0; i < results.size(); ++i) {
            const auto n = static_cast<std::ptrdiff_t>(3 * results[i].size());
            out[i].assign(std::make_move_iterator(next), std::make_move_iterator(next + n));
            next += n;
        }
        return out;
    }

    // entities or entities-batch from the body's text, its vectors read into this thread's
    // buffers. Nullopt for text the reader does not take or another op: the tree's way.
    std::optional<Result<std::string>> entities_text(std::string_view text) {
        thread_local VectorQueryScratch scratch;
        if (!schema::read_vector_query(text, scratch.query)) return std::nullopt;
        const auto& q = scratch.query;
        const bool per_vector = q.op == kOpEntitiesBatch;
        if (!per_vector && q.op != kOpEntities) return std::nullopt;
        op_ = q.op;
        scratch.vectors.clear();
        for (std::size_t i = 0; i < q.size(); ++i) scratch.vectors.push_back(q.vector(i));
        auto reply = entities(VectorQuery{q.collection, scratch.vectors, q.limit}, per_vector);
        // A thread keeps buffers for graph RAG's queries (~2,700 numbers), not for the largest
        // body it ever read.
        if (scratch.query.values.capacity() > kKeptVectorValues) scratch = VectorQueryScratch{};
        return reply;
    }

    Result<std::string> entities_tree(const json& body, bool per_vector) {
        auto q = schema::decode<schema::GraphEmbeddingsQuery>(body);
        if (!q) return std::move(q).error();
        const std::vector<std::span<const double>> vectors(q->vectors.begin(), q->vectors.end());
        return entities(VectorQuery{q->collection, vectors, q->limit}, per_vector);
    }

    // `entities` merges every vector's matches into one list; `entities-batch` answers each
    // vector with its own list (ordered alike).
    Result<std::string> entities(const VectorQuery& q, bool per_vector) {
        auto lists = entity_matches(q, per_vector);
        if (!lists) return std::move(lists).error();
        if (per_vector) {
            return schema::encode_text(
                schema::GraphEmbeddingsBatchResponse{std::move(lists).value()});
        }
        schema::GraphEmbeddingsResponse reply;
        if (!lists->empty()) reply.entities = std::move(lists->front());
        return schema::encode_text(reply);
    }

    // The query's nearest entities: one list per vector, or one list for all of them (best
    // score per entity); the terms of every list read in one go.
    Result<std::vector<std::vector<schema::EntityMatch>>> entity_matches(const VectorQuery& q,
                                                                         bool per_vector) {
        if (auto r = check_vector_query(per_vector ? kOpEntitiesBatch : kOpEntities,
                                        q.vectors.size(), q.limit, per_vector, config_.bounds);
            !r) {
            return r.error();
        }
        auto kb = base(q.collection, false);
        if (!kb) return std::move(kb).error();
        auto reading = read(**kb);
        if (!reading) return std::move(reading).error();
        if (ctx_.cancelled()) return ctx_.cancellation_error();
        const std::uint32_t limit = retrieval_limit(q.limit);
        // Every vector's search in one (a scan reads the index once for all of them).
        auto found = (*kb)->entity_vectors().search_each(q.vectors, limit);
        if (!found) return std::move(found).error();
        std::vector<std::vector<VectorMatch>> matches;
        matches.reserve(per_vector ? found->size() : 1);
        if (per_vector) {
            for (const auto& list : *found) matches.push_back(merge_best({&list, 1}, limit));
        } else {
            matches.push_back(merge_best(*found, limit));
        }
        std::size_t count = 0;
        for (const auto& list : matches) count += list.size();
        std::vector<std::int64_t> ids;
        ids.reserve(count);
        for (const auto& list : matches) {
            for (const auto& m : list) ids.push_back(m.key);
        }
        auto terms = (*kb)->graph().terms(ids);
        if (!terms) return std::move(terms).error();
        std::vector<std::vector<schema::EntityMatch>> lists;
        lists.reserve(matches.size());
        std::size_t next = 0;
        for (const auto& found : matches) {
            auto& out = lists.emplace_back();
            out.reserve(found.size());
            for (const auto& m : found)
                out.push_back({std::move((*terms)[next++]), static_cast<double>(m.score)});
        }
        return lists;
    }

    // Vector matches as chunk URIs (rowids the document store no longer has are left out).
    Result<std::vector<std::pair<std::string, double>>> chunk_vector_matches(
        KnowledgeBase& kb, const std::vector<std::vector<double>>& vectors, std::uint32_t limit) {
        auto matches = search_all(kb.chunk_vectors(), vectors, limit);
        if (!matches) return std::move(matches).error();
        std::vector<std::int64_t> rowids;
        for (const auto& m : *matches) rowids.push_back(m.key);
        auto fetched = kb.documents().fetch_rowids(rowids);
        if (!fetched) return std::move(fetched).error();
        std::unordered_map<std::int64_t, std::string> uri_of;
        for (const auto& c : fetched->chunks) uri_of.emplace(c.rowid, c.chunk.chunk_id);
        std::vector<std::pair<std::string, double>> out;
        for (const auto& m : *matches) {
            if (auto it = uri_of.find(m.key); it != uri_of.end())
                out.emplace_back(it->second, m.score);
        }
        return out;
    }

    Result<json> chunks_vector(const json& body) {
        auto op = begin_read<schema::DocumentEmbeddingsQuery>(body);
        if (!op) return std::move(op).error();
        const auto& q = op->q;
        KnowledgeBase& kb = *op->kb;
        auto matches = chunk_vector_matches(kb, q.vectors, retrieval_limit(q.limit));
        if (!matches) return std::move(matches).error();
        schema::ChunkMatchResponse reply;
        for (auto& [uri, score] : *matches) reply.chunks.push_back({uri, score});
        return schema::encode(reply);
    }

    Result<json> chunks_keyword(const json& body) {
        auto op = begin_read<schema::ChunkKeywordQuery>(body);
        if (!op) return std::move(op).error();
        const auto& q = op->q;
        KnowledgeBase& kb = *op->kb;
        auto matches = kb.documents().keyword(q.query, retrieval_limit(q.limit));
        if (!matches) return std::move(matches).error();
        schema::ChunkMatchResponse reply;
        for (const auto& m : *matches) reply.chunks.push_back({m.chunk_uri, m.score});
        return schema::encode(reply);
    }

    // Vector and keyword rankings fused by reciprocal rank: score = sum of 1 / (60 + rank).
    Result<json> chunks_hybrid(const json& body) {
        auto op = begin_read<schema::HybridChunkQuery>(body);
        if (!op) return std::move(op).error();
        const auto& q = op->q;
        KnowledgeBase& kb = *op->kb;
        const std::uint32_t limit = retrieval_limit(q.limit);
        // Each ranking is read deeper than the answer so fusion can lift a chunk both rank well.
        const std::uint32_t depth = std::min(kMaxRetrievalLimit, limit * 3);
        std::map<std::string, double> fused;
        if (!q.vectors.empty()) {
            auto vector = chunk_vector_matches(kb, q.vectors, depth);
            if (!vector) return std::move(vector).error();
            for (std::size_t rank = 0; rank < vector->size(); ++rank) {
                fused[(*vector)[rank].first] += 1.0 / (kRrfK + static_cast<double>(rank + 1));
            }
        }
        auto keyword = kb.documents().keyword(q.query, depth);
        if (!keyword) return std::move(keyword).error();
        for (std::size_t rank = 0; rank < keyword->size(); ++rank) {
            fused[(*keyword)[rank].chunk_uri] += 1.0 / (kRrfK + static_cast<double>(rank + 1));
        }
        std::vector<schema::ChunkMatch> ranked;
        for (auto& [uri, score] : fused) ranked.push_back({uri, score});
        std::sort(ranked.begin(), ranked.end(),
                  [](const schema::ChunkMatch& a, const schema::ChunkMatch& b) {
                      return a.score != b.score ? a.score > b.score : a.chunk_id < b.chunk_id;
                  });
        if (ranked.size() > limit) ranked.resize(limit);
        return schema::encode(schema::ChunkMatchResponse{std::move(ranked)});
    }

    Result<json> chunks_fetch(const json& body) {
        auto op = begin_read<schema::ChunkFetchRequest>(body);
        if (!op) return std::move(op).error();
        const auto& q = op->q;
        KnowledgeBase& kb = *op->kb;
        auto fetched = kb.documents().fetch(q.chunk_ids, config_.bounds.max_reply_bytes);
        if (!fetched) return std::move(fetched).error();
        auto max_age = read_max_age(kb.db());
        if (!max_age) return std::move(max_age).error();
        const auto now = config_.clock();
        schema::ChunkFetchResponse reply;
        for (auto& c : fetched->chunks) {
            mark_freshness(c.chunk, *max_age, now);
            reply.chunks.push_back(std::move(c.chunk));
        }
        json out = schema::encode(reply);
        out["unknown"] = fetched->unknown;
        return out;
    }

    Result<std::string> fact_sources(const json& body) {
        auto q = schema::decode<schema::FactSourcesRequest>(body);
        if (!q) return std::move(q).error();
        return fact_sources(std::move(q).value());
    }

    Result<std::string> fact_sources(schema::FactSourcesRequest request) {
        auto op = begin_read(std::move(request));
        if (!op) return std::move(op).error();
        const auto& q = op->q;
        KnowledgeBase& kb = *op->kb;
        auto max_age = read_max_age(kb.db());
        if (!max_age) return std::move(max_age).error();
        const auto now = config_.clock();
        // Every fact's sources at once (one statement on PostgreSQL), within the reply's bytes
        // and the request's cancellation.
        auto budget = match_budget(config_.bounds.max_reply_bytes);
        auto all_sources = kb.graph().sources_of_each(q.triples, &budget);
        if (!all_sources) return std::move(all_sources).error();
        if (budget.stopped || ctx_.cancelled()) return ctx_.cancellation_error();
        if (budget.over_bytes) {
            return reply_too_large(
                kOpFactSources, config_.bounds.max_reply_bytes, "max_reply_bytes",
                "reached by the sources of " + std::to_string(q.triples.size()) + " triples",
                "ask about fewer triples per request");
        }
        schema::FactSourcesResponse reply;
        std::size_t bytes = 0;
        for (auto& sources : *all_sources) {
            std::vector<schema::FactSource> wire;
            wire.reserve(sources.size());
            for (auto& s : sources) {
                bytes += kSourceWireOverhead + s.uri.size() + s.document_uri.size() +
                         s.loaded_at.size() + s.source_date.size();
                wire.push_back(to_wire(std::move(s)));
            }
            mark_freshness(wire, *max_age, now);
            if (bytes > config_.bounds.max_reply_bytes) {
                return reply_too_large(
                    kOpFactSources, config_.bounds.max_reply_bytes, "max_reply_bytes",
                    "reached at triple " + std::to_string(reply.sources.size() + 1) + " of " +
                        std::to_string(q.triples.size()),
                    "ask about fewer triples per request");
            }
            reply.sources.push_back(std::move(wire));
        }
        return schema::encode_text(reply);
    }

    Result<std::string> labels(const json& body) {
        auto q = schema::decode<schema::LabelsRequest>(body);
        if (!q) return std::move(q).error();
        return labels(std::move(q).value());
    }

    Result<std::string> labels(schema::LabelsRequest request) {
        auto op = begin_read(std::move(request));
        if (!op) return std::move(op).error();
        const auto& q = op->q;
        KnowledgeBase& kb = *op->kb;
        auto named = kb.graph().labels(q.terms, config_.bounds.max_reply_bytes);
        if (!named) return std::move(named).error();
        return schema::encode_text(schema::LabelsResponse{std::move(named).value()});
    }

    Result<json> stats(const json& body) {
        auto q = schema::decode<schema::StoreStatsRequest>(body);
        if (!q) return std::move(q).error();
        // Before the collection's lock is taken: it reads every collection under its own.
        auto mirror =
            sparql_mirror_stats(bases_, config_.sparql_mirror.get(), config_.max_collections);
        if (!mirror) return std::move(mirror).error();
        if (q->sparql_mirror_only) {
            schema::StoreStats only;
            only.sparql_mirror = std::move(mirror).value();
            return schema::encode(only);
        }
        auto kb = base(q->collection, false);
        if (!kb) return std::move(kb).error();
        auto reading = read(**kb);
        if (!reading) return std::move(reading).error();
        auto graph = (*kb)->graph().stats();
        if (!graph) return std::move(graph).error();
        auto documents = (*kb)->documents().stats();
        if (!documents) return std::move(documents).error();
        schema::StoreStats out;
        out.collection = (*kb)->collection();
        out.quads = graph->quads;
        out.subjects = graph->subjects;
        out.predicates = graph->predicates;
        out.objects = graph->objects;
        out.terms = graph->terms;
        out.graphs = graph->graphs;
        out.sources = graph->sources;
        for (std::size_t tier = 1; tier <= 4; ++tier) {
            if (graph->facts_per_tier[tier] > 0)
                out.facts_per_tier[std::to_string(tier)] = graph->facts_per_tier[tier];
        }
        out.documents = documents->documents;
        out.chunks = documents->chunks;
        out.entity_vectors = (*kb)->entity_vectors().size();
        out.chunk_vectors = (*kb)->chunk_vectors().size();
        out.model = (*kb)->entity_vectors().model().empty() ? (*kb)->chunk_vectors().model()
                                                            : (*kb)->entity_vectors().model();
        out.dim = std::max((*kb)->entity_vectors().dim(), (*kb)->chunk_vectors().dim());
        out.bytes_on_disk = (*kb)->bytes_on_disk();
        for (std::size_t tier = 1; tier <= 4; ++tier) {
            const std::string key = std::to_string(tier);
            const std::uint64_t docs = documents->documents_per_tier[tier];
            const std::uint64_t chunks = documents->chunks_per_tier[tier];
            if (docs > 0) out.documents_per_tier[key] = docs;
            if (chunks > 0) out.chunks_per_tier[key] = chunks;
        }
        auto loaded = last_loaded((*kb)->db());
        if (!loaded) return std::move(loaded).error();
        out.last_loaded = std::move(loaded).value();
        auto freshness = summarize_freshness((*kb)->db(), config_.clock());
        if (!freshness) return std::move(freshness).error();
        out.max_age = std::move(freshness->max_age);
        out.stale_sources = freshness->stale_sources;
        out.sparql_mirror = std::move(mirror).value();
        return schema::encode(out);
    }

    // Declares or removes a collection's revalidation age (docs/collections.md §4); the reply is
    // the collection's summary with it.
    Result<json> collection_set(const json& body) {
        auto q = schema::decode<schema::CollectionSetRequest>(body);
        if (!q) return std::move(q).error();
        std::optional<std::chrono::seconds> max_age;
        if (!q->max_age.empty() && q->max_age != "none") {
            auto parsed = schema::parse_max_age(q->max_age);
            if (!parsed) return std::move(parsed).error();
            max_age = *parsed;
        }
        auto kb = base(q->collection, q->create);
        if (!kb) return std::move(kb).error();
        auto held = (*kb)->lock();
        if (!held) return std::move(held).error();
        if (!q->max_age.empty()) {
            if (auto r = write_max_age((*kb)->db(), max_age); !r) return std::move(r).error();
        }
        auto summary = summarize_collection(**kb, config_.clock());
        if (!summary) return std::move(summary).error();
        const auto log = base::component_logger("store");
        log->info("event=collection_set collection={} max_age={}", summary->collection,
                  summary->max_age.empty() ? "none" : summary->max_age);
        return schema::encode(*summary);
    }

    // Every collection with a file, by name, each counted under its own lock. A collection
    // deleted meanwhile is left out, and so is a file that is not a usable knowledge base (logged:
    // its error names a path of the server, and one bad file must not hide the others).
    Result<json> collections() {
        schema::CollectionList reply;
        auto listed = bases_.list();
        if (!listed) return std::move(listed).error();
        std::vector<std::string> names = std::move(listed).value();
        if (names.size() > config_.max_collections) {
            names.resize(config_.max_collections);
            reply.truncated = true;
        }
        for (const auto& name : names) {
            if (ctx_.cancelled()) return ctx_.cancellation_error();
            auto kb = base(name, false);
            if (!kb) {
                if (kb.error().type != ErrorType::kNotFound) {
                    const auto log = base::component_logger("store");
                    log->warn("event=collection_unreadable collection={} error=\"{}\"", name,
                              kb.error().message);
                }
                continue;
            }
            auto held = (*kb)->lock();
            if (!held) continue;
            auto summary = summarize_collection(**kb, config_.clock());
            if (!summary) return std::move(summary).error();
            reply.collections.push_back(std::move(summary).value());
        }
        return schema::encode(reply);
    }

    // The collection's files go, after its counts are taken (the reply says what was removed).
    // Refused while a staged load into it is in progress (docs/collections.md).
    Result<json> collection_delete(const json& body) {
        auto q = schema::decode<schema::CollectionDeleteRequest>(body);
        if (!q) return std::move(q).error();
        schema::CollectionDeleted reply;
        const auto no_load_in_progress = [this](KnowledgeBase& kb) {
            const auto now = std::chrono::system_clock::now();
            return refuse_if_loading(kb, config_.staged_load_idle, now);
        };
        const auto take_counts = [this, &reply](KnowledgeBase& kb) -> Result<void> {
            auto summary = summarize_collection(kb, config_.clock());
            if (!summary) return std::move(summary).error();
            reply.removed = std::move(summary).value();
            return {};
        };
        auto removed = bases_.remove(q->collection, no_load_in_progress, take_counts);
        if (!removed) return std::move(removed).error();
        const auto& gone = reply.removed;
        const auto log = base::component_logger("store");
        log->info("event=collection_deleted collection={} facts={} documents={} bytes={}",
                  gone.collection, gone.facts, gone.documents, gone.bytes_on_disk);
        return schema::encode(reply);
    }

    static std::string loaded_at_or_now(const std::string& loaded_at) {
        return loaded_at.empty() ? base::format_xsd_datetime(std::chrono::system_clock::now())
                                 : loaded_at;
    }

    // A load-triples batch as it came: N-Quads text, or the dictionary-encoded form's two texts
    // (schema/indexed_quads.hpp).
    struct BatchText {
        bool indexed = false;
        std::string_view nquads;
        std::string_view terms;
        std::string_view statements;
    };

    Result<json> load_triples(const json& body) {
        const auto text = body.find("nquads");
        const auto terms = body.find("terms");
        const auto statements = body.find("statements");
        BatchText batch;
        batch.indexed = terms != body.end() || statements != body.end();
        if (batch.indexed) {
            if (text != body.end() || terms == body.end() || !terms->is_string() ||
                statements == body.end() || !statements->is_string()) {
                return make_error(ErrorType::kInvalidRequest,
                                  "load-triples takes either \"nquads\" or the dictionary-encoded "
                                  "\"terms\" and \"statements\" (all strings), not a mix");
            }
            batch.terms = terms->get_ref<const std::string&>();
            batch.statements = statements->get_ref<const std::string&>();
        } else if (text == body.end() || !text->is_string()) {
            // Text under another key ("triples", "text") would decode as an empty batch and load
            // nothing while answering success (issue 16): the text must be there.
            return make_error(
                ErrorType::kInvalidRequest,
                "load-triples needs \"nquads\": the statements as N-Quads text (a string)");
        } else {
            batch.nquads = text->get_ref<const std::string&>();
        }
        // The other fields decoded without a copy of the text (megabytes a batch): it is read
        // where it is.
        json fields = json::object();
        for (auto it = body.begin(); it != body.end(); ++it) {
            if (it.key() != "nquads" && it.key() != "terms" && it.key() != "statements")
                fields[it.key()] = it.value();
        }
        return load_triples(fields, batch);
    }

    // load-triples from the body's text: the fields other than the batch's texts (a few hundred
    // bytes) are parsed as a tree, the texts unescaped straight from the body. Nullopt for text
    // the cursor does not take (another op, no batch or a mix of both forms, an escaped key,
    // invalid JSON): the caller parses it whole, which gives the result or the error.
    std::optional<Result<json>> load_triples_text(std::string_view text) {
        schema::JsonCursor cursor(text);
        schema::JsonKeys keys;
        std::string op;
        std::string nquads;
        std::string terms;
        std::string statements;
        std::string others = "{";
        const bool read = cursor.object([&](std::string_view key) {
            if (key == "nquads") return keys.first(1) && cursor.string(nquads);
            if (key == "terms") return keys.first(4) && cursor.string(terms);
            if (key == "statements") return keys.first(8) && cursor.string(statements);
            const char* start = cursor.position();
            if (key == "op" && !(keys.first(2) && cursor.string(op))) return false;
            if (key != "op" && !cursor.skip()) return false;
            if (others.size() > 1) others += ',';
            others.append("\"").append(key).append("\":");
            others.append(start, cursor.position());
            return true;
        });
        const unsigned batch_keys = keys.seen() & (1U | 4U | 8U);
        if (!read || !cursor.at_end() || (batch_keys != 1U && batch_keys != (4U | 8U)) ||
            op != kOpLoadTriples)
            return std::nullopt;
        others += '}';
        auto fields = schema::parse_untrusted_json(others);
        if (!fields) return std::nullopt;
        return load_triples(*fields, BatchText{batch_keys != 1U, nquads, terms, statements});
    }

    // A batch parsed (and so checked whole) before the lock: bad text writes nothing.
    struct ParsedBatch {
        std::vector<schema::Triple> triples;
        std::optional<schema::IndexedQuads> indexed;
    };

    static Result<ParsedBatch> parse_batch(const BatchText& text) {
        ParsedBatch parsed;
        if (text.indexed) {
            auto quads = schema::parse_indexed_quads(text.terms, text.statements);
            if (!quads) return std::move(quads).error();
            parsed.indexed = std::move(quads).value();
            return parsed;
        }
        auto triples = schema::parse_nquads(text.nquads);
        if (!triples) return std::move(triples).error();
        parsed.triples = std::move(triples).value();
        return parsed;
    }

    // A dictionary-encoded batch as triples, for the unstaged insert (which takes triples).
    static std::vector<schema::Triple> indexed_triples(const schema::IndexedQuads& quads) {
        std::vector<schema::Triple> triples;
        triples.reserve(quads.statements.size());
        for (const auto& at : quads.statements) {
            std::optional<std::string> graph;
            if (at[3] != schema::kDefaultGraphIndex) graph = quads.terms[at[3]].as_iri().value;
            triples.push_back(schema::Triple{quads.terms[at[0]], quads.terms[at[1]],
                                             quads.terms[at[2]], std::move(graph)});
        }
        return triples;
    }

    // `fields`: the body but its batch, which is `text`.
    Result<json> load_triples(json fields, const BatchText& text) {
        fields["nquads"] = "";
        const json& body = fields;
        auto q = schema::decode<schema::LoadTriplesRequest>(fields);
        if (!q) return std::move(q).error();
        if (q->source.uri.empty()) {
            return make_error(ErrorType::kInvalidRequest,
                              "load-triples needs source.uri (the file's URI)");
        }
        auto load = staged_load_name(body);
        // A staged dictionary-encoded batch is read from its texts straight into its keys.
        const bool staged_text = load && !load->empty() && text.indexed;
        auto parsed = staged_text ? Result<ParsedBatch>(ParsedBatch{}) : parse_batch(text);
        if (!parsed) return std::move(parsed).error();
        auto read = staged_text ? TermBatch::build(text.terms, text.statements)
                                : Result<TermBatch>(TermBatch{});
        if (!read) return std::move(read).error();
        auto kb = base(q->collection, true);
        if (!kb) return std::move(kb).error();
        SourceRecord source;
        source.uri = q->source.uri;
        source.kind = SourceKind::kFile;
        source.tier = q->source.tier == 0 ? schema::kDefaultTier : q->source.tier;
        source.loaded_at = loaded_at_or_now(q->source.loaded_at);
        source.media_type = q->source.media_type;
        source.source_date = q->source.date;
        if (!load) return std::move(load).error();
        if (!load->empty()) {
            // The batch's distinct keys are built before the lock: another request's batch can
            // be staged meanwhile.
            auto batch = staged_text       ? std::move(read)
                         : parsed->indexed ? TermBatch::build(std::move(*parsed->indexed))
                                           : TermBatch::build(parsed->triples);
            if (!batch) return std::move(batch).error();
            auto held = (*kb)->lock();
            if (!held) return std::move(held).error();
            // Staged: counted at load-commit, where the facts become visible.
            auto staged = (*kb)->graph().stage(*load, source, *batch);
            if (!staged) return std::move(staged).error();
            return schema::encode(schema::LoadTriplesResponse{*staged, 0, 0});
        }
        if (parsed->indexed) parsed->triples = indexed_triples(*parsed->indexed);
        const auto& triples = parsed->triples;
        auto held = (*kb)->lock();
        if (!held) return std::move(held).error();
        auto source_id = (*kb)->graph().register_source(source);
        if (!source_id) return std::move(source_id).error();
        auto counts = (*kb)->graph().insert(*source_id, triples);
        if (!counts) return std::move(counts).error();
        return schema::encode(
            schema::LoadTriplesResponse{triples.size(), counts->added, counts->already_present});
    }

    // The optional "load" of load-triples, and the required one of load-commit / load-abort
    // (the name itself is checked by the graph store).
    static Result<std::string> staged_load_name(const json& body, bool required = false) {
        const auto field = body.find("load");
        if (field == body.end() || field->is_null()) {
            if (!required) return std::string();
            return make_error(ErrorType::kDecodeError, "load: required (the staged load's name)");
        }
        if (!field->is_string())
            return make_error(ErrorType::kDecodeError, "load: expected a string");
        return field->get<std::string>();
    }

    static Result<std::string> collection_of(const json& body) {
        const auto field = body.find("collection");
        if (field == body.end() || field->is_null()) return std::string();
        if (!field->is_string())
            return make_error(ErrorType::kDecodeError, "collection: expected a string");
        return field->get<std::string>();
    }

    Result<json> load_commit(const json& body) {
        auto load = staged_load_name(body, true);
        if (!load) return std::move(load).error();
        auto collection = collection_of(body);
        if (!collection) return std::move(collection).error();
        if (const auto replace = body.find("replace");
            replace != body.end() && !replace->is_null()) {
            if (!replace->is_boolean())
                return make_error(ErrorType::kDecodeError, "replace: expected a boolean");
            if (replace->get<bool>())
                return run_replacing_commit(ctx_, bases_, *collection, *load, body);
        }
        auto kb = base(*collection, true);
        if (!kb) return std::move(kb).error();
        auto held = (*kb)->lock();
        if (!held) return std::move(held).error();
        auto counts = (*kb)->graph().commit_staged(*load);
        if (!counts) return std::move(counts).error();
        return schema::encode(schema::LoadTriplesResponse{counts->added + counts->already_present,
                                                          counts->added, counts->already_present});
    }

    Result<json> load_abort(const json& body) {
        auto load = staged_load_name(body, true);
        if (!load) return std::move(load).error();
        auto collection = collection_of(body);
        if (!collection) return std::move(collection).error();
        auto kb = base(*collection, false);
        if (!kb) return std::move(kb).error();
        auto held = (*kb)->lock();
        if (!held) return std::move(held).error();
        if (auto r = (*kb)->graph().abort_staged(*load); !r) return std::move(r).error();
        return json::object();
    }

    Result<json> load_documents(const json& body) {
        auto q = schema::decode<schema::LoadDocumentsRequest>(body);
        if (!q) return std::move(q).error();
        if (auto r = check_request(*q, config_.bounds); !r) return r.error();
        auto kb = base(q->collection, true);
        if (!kb) return std::move(kb).error();
        schema::LoadDocumentsResponse reply;
        auto held = (*kb)->lock();
        if (!held) return std::move(held).error();
        // One transaction for the request: a bad document leaves none of them written.
        auto tx =
            storage::sql::Transaction::begin((*kb)->db(), storage::sql::TransactionKind::kWrite);
        if (!tx) return std::move(tx).error();
        std::vector<std::int64_t> removed;
        for (std::size_t i = 0; i < q->documents.size(); ++i) {
            // Nothing is committed yet: the transaction rolls back.
            if (ctx_.cancelled()) return ctx_.cancellation_error();
            const auto& doc = q->documents[i];
            DocumentRecord record;
            record.uri = doc.uri;
            record.title = doc.title;
            record.source_path = doc.source.path;
            record.media_type = doc.source.media_type;
            record.tier = doc.source.tier == 0 ? schema::kDefaultTier : doc.source.tier;
            record.loaded_at = loaded_at_or_now(doc.source.loaded_at);
            record.source_date = doc.source.date;
            record.text = doc.text;
            std::vector<ChunkRecord> chunks;
            chunks.reserve(doc.chunks.size());
            for (const auto& c : doc.chunks)
                chunks.push_back({c.ordinal, c.char_offset, c.char_length, c.text});
            auto put = (*kb)->documents().put(record, chunks, TransactionMode::kCallers);
            if (!put) {
                return make_error(put.error().type, "documents[" + std::to_string(i) + "] (" +
                                                        doc.uri + "): " + put.error().message);
            }
            switch (put->outcome) {
                case PutOutcome::kAdded:
                    ++reply.documents_added;
                    break;
                case PutOutcome::kReplaced:
                    ++reply.documents_replaced;
                    break;
                case PutOutcome::kUnchanged:
                    ++reply.documents_unchanged;
                    break;
            }
            reply.chunks_written += put->chunk_rowids.size();
            removed.insert(removed.end(), put->removed_rowids.begin(), put->removed_rowids.end());
        }
        if (auto r = tx->commit(); !r) return r.error();
        // Vectors of replaced chunks go; the new chunks are embedded by the `index` operation.
        if (!removed.empty()) {
            if (auto r = (*kb)->chunk_vectors().remove(removed); !r) return r.error();
        }
        return schema::encode(reply);
    }

    // Embeds `texts` through the embeddings service, without holding any store lock.
    Result<schema::EmbeddingsResponse> embed(const std::vector<std::string>& texts) {
        auto called =
            ctx_.call(config_.embeddings_service, schema::encode(schema::EmbeddingsRequest{texts}),
                      config_.embed_timeout, {}, runtime::FinalBody::kTextOnly);
        if (!called) {
            return make_error(called.error().type, "embedding through `" +
                                                       config_.embeddings_service +
                                                       "`: " + called.error().message);
        }
        auto response = schema::decode_text<schema::EmbeddingsResponse>(called->final_text);
        if (!response) return std::move(response).error();
        if (response->vectors.size() != texts.size()) {
            return make_error(ErrorType::kUpstreamError,
                              "the embeddings service answered " +
                                  std::to_string(response->vectors.size()) + " vectors for " +
                                  std::to_string(texts.size()) + " texts");
        }
        return response;
    }

    // Pages of (key, text) after the kind's mark: embed them, add them, raise the mark.
    template <typename PageFn>
    Result<std::uint64_t> index_kind(KnowledgeBase& kb, IndexKind kind, PageFn&& next_page,
                                     schema::IndexResponse& reply) {
        std::uint64_t indexed = 0;
        for (;;) {
            if (ctx_.cancelled()) return ctx_.cancellation_error();
            std::vector<std::int64_t> keys;
            std::vector<std::string> texts;
            {
                // A delete between pages ends the request: kNotFound, nothing more written.
                auto held = kb.lock();
                if (!held) return std::move(held).error();
                auto mark = kb.index_mark(kind);
                if (!mark) return std::move(mark).error();
                if (auto r = next_page(*mark, keys, texts); !r) return r.error();
            }
            if (keys.empty()) return indexed;
            auto vectors = embed(texts);
            if (!vectors) return std::move(vectors).error();
            auto held = kb.lock();
            if (!held) return std::move(held).error();
            auto& index = kind == IndexKind::kEntity ? kb.entity_vectors() : kb.chunk_vectors();
            if (auto r = index.add(keys, vectors->vectors, vectors->model); !r) return r.error();
            if (auto r = kb.set_index_mark(kind, keys.back()); !r) return r.error();
            reply.model = vectors->model;
            reply.dim = vectors->dim;
            indexed += keys.size();
        }
    }

    Result<json> index(const json& body) {
        auto q = schema::decode<schema::IndexRequest>(body);
        if (!q) return std::move(q).error();
        auto kb = base(q->collection, false);
        if (!kb) return std::move(kb).error();
        schema::IndexResponse reply;
        const std::size_t page = config_.embed_batch;
        auto entities = index_kind(
            **kb, IndexKind::kEntity,
            [&](std::int64_t after, std::vector<std::int64_t>& keys,
                std::vector<std::string>& texts) -> Result<void> {
                auto found = (*kb)->graph().entities_to_index(after, page);
                if (!found) return std::move(found).error();
                for (auto& e : *found) {
                    keys.push_back(e.id);
                    texts.push_back(std::move(e.label));
                }
                return {};
            },
            reply);
        if (!entities) return std::move(entities).error();
        reply.entities_indexed = *entities;
        auto chunks = index_kind(
            **kb, IndexKind::kChunk,
            [&](std::int64_t after, std::vector<std::int64_t>& keys,
                std::vector<std::string>& texts) -> Result<void> {
                auto found = (*kb)->documents().chunks_after(after, page);
                if (!found) return std::move(found).error();
                for (auto& c : *found) {
                    keys.push_back(c.rowid);
                    // The title gives a chunk the context its text may lack.
                    texts.push_back(c.chunk.document_title.empty()
                                        ? std::move(c.chunk.text)
                                        : c.chunk.document_title + "\n" + c.chunk.text);
                }
                return {};
            },
            reply);
        if (!chunks) return std::move(chunks).error();
        reply.chunks_indexed = *chunks;
        {
            auto held = (*kb)->lock();
            if (!held) return std::move(held).error();
            // The index files are caches; a failed save only costs a rebuild at the next open.
            if (auto r = (*kb)->entity_vectors().save(); !r) {
                base::component_logger("store")->warn(
                    "event=index_save_failed kind=entity error=\"{}\"", r.error().message);
            }
            if (auto r = (*kb)->chunk_vectors().save(); !r) {
                base::component_logger("store")->warn(
                    "event=index_save_failed kind=chunk error=\"{}\"", r.error().message);
            }
        }
        return schema::encode(reply);
    }

    runtime::RequestContext& ctx_;
    KnowledgeBases& bases_;
    const StoreServiceConfig& config_;
    std::string op_;
    json tree_;  // the body, when the runtime left it as text and it is read as a tree after all
};

}  // namespace

bool reads_body_as_text(std::string_view body) noexcept {
    // `glassbox load` writes the op before the N-Quads (ingest/load.cpp), and a client's queries
    // (keys in dump()'s sorted order) have theirs before their vectors, patterns, triples or
    // terms; the readers decide.
    return !text_op(body).empty();
}

void StoreService::handle(runtime::RequestContext& ctx) {
    Operation operation(ctx, bases_, config_);
    operation.run();
    if (config_.sparql_mirror && operation.writes()) config_.sparql_mirror->notify_change();
}

}  // namespace glassbox::store
