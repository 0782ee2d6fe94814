// Codecs of the knowledge store's and the embeddings service's messages (docs/knowledge.md):
// triple patterns, vectors, chunks, loads, provenance, labels, stats, collections — one field list
// per struct.
#include "schema/messages.hpp"

#include <tuple>

#include "schema/detail/message_codecs.hpp"

namespace glassbox::schema {
namespace detail {

#define GLASSBOX_FIELDS(S, ...)                                \
    template <>                                                \
    struct FieldList<S> {                                      \
        using T = S;                                           \
        static constexpr auto value = std::tuple{__VA_ARGS__}; \
    };

GLASSBOX_FIELDS(TriplePattern, field("s", &T::s), field("p", &T::p), field("o", &T::o),
                field("g", &T::g))
GLASSBOX_FIELDS(TriplesQuery, field("s", &T::s), field("p", &T::p), field("o", &T::o),
                field("g", &T::g), field("limit", &T::limit), field("collection", &T::collection))
GLASSBOX_FIELDS(TriplesQueryBatch, field("patterns", &T::patterns), field("limit", &T::limit),
                field("collection", &T::collection), field("labels", &T::labels),
                field("rows", &T::rows))
GLASSBOX_FIELDS(TriplesResponse, field("triples", &T::triples))
GLASSBOX_FIELDS(TriplesBatchResponse, field("results", &T::results), field("labels", &T::labels),
                field("counts", &T::counts))
GLASSBOX_FIELDS(EmbeddingsRequest, field("texts", &T::texts))
GLASSBOX_FIELDS(EmbeddingsResponse, field("vectors", &T::vectors), field("model", &T::model),
                field("dim", &T::dim))
GLASSBOX_FIELDS(GraphEmbeddingsQuery, field("vectors", &T::vectors), field("limit", &T::limit),
                field("collection", &T::collection))
GLASSBOX_FIELDS(EntityMatch, required("entity", &T::entity), field("score", &T::score))
GLASSBOX_FIELDS(GraphEmbeddingsResponse, field("entities", &T::entities))
GLASSBOX_FIELDS(GraphEmbeddingsBatchResponse, field("results", &T::results))
GLASSBOX_FIELDS(DocumentEmbeddingsQuery, field("vectors", &T::vectors), field("limit", &T::limit),
                field("collection", &T::collection))
GLASSBOX_FIELDS(ChunkKeywordQuery, field("query", &T::query), field("limit", &T::limit),
                field("collection", &T::collection))
GLASSBOX_FIELDS(ChunkMatch, field("chunk_id", &T::chunk_id), field("score", &T::score))
GLASSBOX_FIELDS(ChunkMatchResponse, field("chunks", &T::chunks))
GLASSBOX_FIELDS(ChunkFetchRequest, field("chunk_ids", &T::chunk_ids),
                field("collection", &T::collection))
GLASSBOX_FIELDS(Chunk, field("chunk_id", &T::chunk_id), field("document_id", &T::document_id),
                field("text", &T::text), field("char_offset", &T::char_offset),
                field("char_length", &T::char_length), field("ordinal", &T::ordinal),
                field("document_title", &T::document_title), field("tier", &T::tier),
                field("loaded_at", &T::loaded_at), field("date", &T::date),
                field("max_age", &T::max_age), field("stale", &T::stale))
GLASSBOX_FIELDS(ChunkFetchResponse, field("chunks", &T::chunks))
GLASSBOX_FIELDS(SourceInfo, field("uri", &T::uri), field("path", &T::path),
                field("media_type", &T::media_type), field("tier", &T::tier),
                field("loaded_at", &T::loaded_at), field("date", &T::date))
GLASSBOX_FIELDS(LoadTriplesRequest, field("collection", &T::collection),
                field("source", &T::source), field("nquads", &T::nquads))
GLASSBOX_FIELDS(LoadTriplesResponse, field("statements", &T::statements), field("added", &T::added),
                field("present", &T::present))
GLASSBOX_FIELDS(ChunkLoad, field("ordinal", &T::ordinal), field("char_offset", &T::char_offset),
                field("char_length", &T::char_length), field("text", &T::text))
GLASSBOX_FIELDS(DocumentLoad, field("uri", &T::uri), field("title", &T::title),
                field("source", &T::source), field("text", &T::text), field("chunks", &T::chunks))
GLASSBOX_FIELDS(LoadDocumentsRequest, field("collection", &T::collection),
                field("documents", &T::documents), field("embed", &T::embed))
GLASSBOX_FIELDS(LoadDocumentsResponse, field("documents_added", &T::documents_added),
                field("documents_replaced", &T::documents_replaced),
                field("documents_unchanged", &T::documents_unchanged),
                field("chunks_written", &T::chunks_written),
                field("chunks_embedded", &T::chunks_embedded))
GLASSBOX_FIELDS(IndexRequest, field("collection", &T::collection))
GLASSBOX_FIELDS(IndexResponse, field("entities_indexed", &T::entities_indexed),
                field("chunks_indexed", &T::chunks_indexed), field("model", &T::model),
                field("dim", &T::dim))
GLASSBOX_FIELDS(FactSourcesRequest, field("collection", &T::collection),
                field("triples", &T::triples))
GLASSBOX_FIELDS(FactSource, field("source", &T::source), field("kind", &T::kind),
                field("document", &T::document), field("tier", &T::tier),
                field("loaded_at", &T::loaded_at), field("date", &T::date),
                field("max_age", &T::max_age), field("stale", &T::stale))
GLASSBOX_FIELDS(FactSourcesResponse, field("sources", &T::sources))
GLASSBOX_FIELDS(LabelsRequest, field("collection", &T::collection), field("terms", &T::terms))
GLASSBOX_FIELDS(LabelsResponse, field("labels", &T::labels))
GLASSBOX_FIELDS(HybridChunkQuery, field("query", &T::query), field("vectors", &T::vectors),
                field("limit", &T::limit), field("collection", &T::collection))
GLASSBOX_FIELDS(StoreStatsRequest, field("collection", &T::collection),
                field("sparql_mirror_only", &T::sparql_mirror_only))
GLASSBOX_FIELDS(SparqlMirrorCollection, field("name", &T::name), field("version", &T::version),
                field("mirrored", &T::mirrored))
GLASSBOX_FIELDS(StoreSparqlMirrorStats, field("configured", &T::configured),
                field("collections", &T::collections), field("pending", &T::pending),
                field("failures", &T::failures), field("last_error", &T::last_error))
GLASSBOX_FIELDS(StoreStats, field("collection", &T::collection), field("quads", &T::quads),
                field("subjects", &T::subjects), field("predicates", &T::predicates),
                field("objects", &T::objects), field("terms", &T::terms),
                field("graphs", &T::graphs), field("sources", &T::sources),
                field("facts_per_tier", &T::facts_per_tier), field("documents", &T::documents),
                field("chunks", &T::chunks), field("entity_vectors", &T::entity_vectors),
                field("chunk_vectors", &T::chunk_vectors), field("model", &T::model),
                field("dim", &T::dim), field("bytes_on_disk", &T::bytes_on_disk),
                field("documents_per_tier", &T::documents_per_tier),
                field("chunks_per_tier", &T::chunks_per_tier),
                field("last_loaded", &T::last_loaded), field("max_age", &T::max_age),
                field("stale_sources", &T::stale_sources),
                field("sparql_mirror", &T::sparql_mirror))
GLASSBOX_FIELDS(CollectionSummary, required("collection", &T::collection),
                field("facts", &T::facts), field("entities", &T::entities),
                field("documents", &T::documents), field("chunks", &T::chunks),
                field("documents_per_tier", &T::documents_per_tier),
                field("chunks_per_tier", &T::chunks_per_tier),
                field("entity_vectors", &T::entity_vectors),
                field("chunk_vectors", &T::chunk_vectors),
                field("bytes_on_disk", &T::bytes_on_disk), field("last_loaded", &T::last_loaded),
                field("max_age", &T::max_age), field("stale_sources", &T::stale_sources))
GLASSBOX_FIELDS(CollectionList, field("collections", &T::collections),
                field("truncated", &T::truncated))
GLASSBOX_FIELDS(CollectionDeleteRequest, required("collection", &T::collection))
GLASSBOX_FIELDS(CollectionSetRequest, required("collection", &T::collection),
                required("max_age", &T::max_age), field("create", &T::create))
GLASSBOX_FIELDS(CollectionDeleted, required("removed", &T::removed))
GLASSBOX_FIELDS(ForgetRequest, field("collection", &T::collection), field("source", &T::source),
                field("document", &T::document), field("fact", &T::fact), field("actor", &T::actor))
GLASSBOX_FIELDS(SourceChangeSummary, required("source", &T::source), field("added", &T::added),
                field("removed", &T::removed), field("kept", &T::kept),
                field("unchanged", &T::unchanged))
GLASSBOX_FIELDS(KnowledgeChangeSummary, required("kind", &T::kind), field("trace", &T::trace),
                field("collection", &T::collection), field("facts_added", &T::facts_added),
                field("facts_removed", &T::facts_removed), field("facts_kept", &T::facts_kept),
                field("facts_unchanged", &T::facts_unchanged),
                field("removed_listed", &T::removed_listed), field("sources", &T::sources),
                field("removed_sources", &T::removed_sources))

#undef GLASSBOX_FIELDS

}  // namespace detail

GLASSBOX_FIELD_LIST_CODEC(TriplePattern)
GLASSBOX_FIELD_LIST_CODEC(TriplesQuery)
GLASSBOX_FIELD_LIST_CODEC(TriplesQueryBatch)
GLASSBOX_FIELD_LIST_CODEC(TriplesResponse)
GLASSBOX_FIELD_LIST_CODEC(TriplesBatchResponse)
GLASSBOX_FIELD_LIST_CODEC(EmbeddingsRequest)
GLASSBOX_FIELD_LIST_CODEC(EmbeddingsResponse)
GLASSBOX_FIELD_LIST_CODEC(GraphEmbeddingsQuery)
GLASSBOX_FIELD_LIST_CODEC(GraphEmbeddingsResponse)
GLASSBOX_FIELD_LIST_CODEC(GraphEmbeddingsBatchResponse)
GLASSBOX_FIELD_LIST_CODEC(DocumentEmbeddingsQuery)
GLASSBOX_FIELD_LIST_CODEC(ChunkKeywordQuery)
GLASSBOX_FIELD_LIST_CODEC(ChunkMatchResponse)
GLASSBOX_FIELD_LIST_CODEC(ChunkFetchRequest)
GLASSBOX_FIELD_LIST_CODEC(ChunkFetchResponse)
GLASSBOX_FIELD_LIST_CODEC(SourceInfo)
GLASSBOX_FIELD_LIST_CODEC(LoadTriplesRequest)
GLASSBOX_FIELD_LIST_CODEC(LoadTriplesResponse)
GLASSBOX_FIELD_LIST_CODEC(ChunkLoad)
GLASSBOX_FIELD_LIST_CODEC(DocumentLoad)
GLASSBOX_FIELD_LIST_CODEC(LoadDocumentsRequest)
GLASSBOX_FIELD_LIST_CODEC(LoadDocumentsResponse)
GLASSBOX_FIELD_LIST_CODEC(IndexRequest)
GLASSBOX_FIELD_LIST_CODEC(IndexResponse)
GLASSBOX_FIELD_LIST_CODEC(FactSourcesRequest)
GLASSBOX_FIELD_LIST_CODEC(FactSource)
GLASSBOX_FIELD_LIST_CODEC(FactSourcesResponse)
GLASSBOX_FIELD_LIST_CODEC(LabelsRequest)
GLASSBOX_FIELD_LIST_CODEC(LabelsResponse)
GLASSBOX_FIELD_LIST_CODEC(HybridChunkQuery)
GLASSBOX_FIELD_LIST_CODEC(StoreStatsRequest)
GLASSBOX_FIELD_LIST_CODEC(StoreStats)
GLASSBOX_FIELD_LIST_CODEC(SparqlMirrorCollection)
GLASSBOX_FIELD_LIST_CODEC(StoreSparqlMirrorStats)
GLASSBOX_FIELD_LIST_CODEC(CollectionSummary)
GLASSBOX_FIELD_LIST_CODEC(CollectionList)
GLASSBOX_FIELD_LIST_CODEC(CollectionDeleteRequest)
GLASSBOX_FIELD_LIST_CODEC(CollectionSetRequest)
GLASSBOX_FIELD_LIST_CODEC(CollectionDeleted)
GLASSBOX_FIELD_LIST_CODEC(ForgetRequest)
GLASSBOX_FIELD_LIST_CODEC(SourceChangeSummary)
GLASSBOX_FIELD_LIST_CODEC(KnowledgeChangeSummary)

}  // namespace glassbox::schema
