// Every message type of DESIGN §3 and docs/protocol.md §8, with non-throwing JSON codecs.
//
// Codec rules, the same for every type:
//  - encode(const T&) -> nlohmann::json writes every field (optional ones only when set).
//  - decode<T>(const json&) -> Result<T> ignores unknown fields, leaves missing (or null)
//    fields at their defaults, and answers a value of the wrong type with
//    ErrorType::kDecodeError naming its path ("explain_triples[3].o.tr.s: expected object,
//    got string"). No exception escapes a decoder.
//  - decode_body<T>(std::string_view) = parse_untrusted_json + decode<T>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "schema/term.hpp"
#include "schema/term_json.hpp"  // encode(Term), encode(Triple) join the overload set
#include "schema/untrusted_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::schema {

// ---- JSON text --------------------------------------------------------------------------

// Reading: parse_untrusted_json (schema/untrusted_json.hpp), bounded by kMaxJsonDepth.
// Compact text; never throws (invalid UTF-8 in strings is replaced by U+FFFD).
std::string dump(const nlohmann::json& value);

// ---- graph RAG ----------------------------------------------------------------------------

// Service defaults, used where a request says 0 (DESIGN §3).
inline constexpr std::uint32_t kDefaultEntityLimit = 50;
inline constexpr std::uint32_t kDefaultTripleLimit = 30;
inline constexpr std::uint32_t kDefaultMaxSubgraphSize = 150;
inline constexpr std::uint32_t kDefaultMaxPathLength = 3;
inline constexpr std::uint32_t kDefaultEdgeScoreLimit = 30;
inline constexpr std::uint32_t kDefaultEdgeLimit = 25;
// Document RAG defaults (chosen here; DESIGN leaves them open).
inline constexpr std::uint32_t kDefaultDocLimit = 20;
inline constexpr std::uint32_t kDefaultFetchLimit = 20;
// Agent default.
inline constexpr std::uint32_t kDefaultMaxIterations = 10;

// `requested`, or `service_default` when the request left it 0.
constexpr std::uint32_t or_default(std::uint32_t requested, std::uint32_t service_default) {
    return requested == 0 ? service_default : requested;
}

struct GraphRagQuery {
    std::string query;
    std::string collection;
    std::uint32_t entity_limit = 0;
    std::uint32_t triple_limit = 0;
    std::uint32_t max_subgraph_size = 0;
    std::uint32_t max_path_length = 0;
    std::uint32_t edge_score_limit = 0;
    std::uint32_t edge_limit = 0;
    bool streaming = false;
    std::optional<std::string> parent_uri;  // the calling step, for sub-traces
    std::string session_id;  // the conversation a top-level question is a turn of ("" = none)
    // A follow-up's "else": what the conversation already answered (labels), which the answer
    // leaves out (docs/rag.md). Absent: nothing is excluded.
    std::optional<std::vector<std::string>> exclude;
    // Below this calibrated confidence the answer says it does not know (docs/confidence.md);
    // absent: the worker's rag.min_confidence.
    std::optional<double> min_confidence;
    // The Question IRI of an earlier run this one asks again (`glassbox traces replay`): the
    // run's Question records prov:wasRevisionOf it (docs/traces.md, "Replay and compare").
    std::optional<std::string> revision_of;
    bool operator==(const GraphRagQuery&) const = default;
};

struct DocumentRagQuery {
    std::string query;
    std::string collection;
    std::uint32_t doc_limit = 0;
    std::uint32_t fetch_limit = 0;
    bool streaming = false;
    std::optional<std::string> parent_uri;
    std::string session_id;                  // as GraphRagQuery::session_id
    std::optional<double> min_confidence;    // as GraphRagQuery::min_confidence
    std::optional<std::string> revision_of;  // as GraphRagQuery::revision_of
    bool operator==(const DocumentRagQuery&) const = default;
};

// One earlier turn of an agent conversation.
struct AgentHistoryStep {
    std::string thought;
    std::string action;
    std::map<std::string, std::string> arguments;
    std::string observation;
    bool operator==(const AgentHistoryStep&) const = default;
};

struct AgentRequest {
    std::string question;
    std::string collection;
    std::vector<AgentHistoryStep> history;
    std::string session_id;
    std::uint32_t max_iterations = 0;
    bool streaming = false;
    std::optional<std::string> parent_uri;
    std::vector<std::string> tools;  // a subset of the worker's tools by name; empty: all
    // Below this calibrated confidence the answer says it does not know (docs/confidence.md);
    // absent: the worker's agent.min_confidence.
    std::optional<double> min_confidence;
    std::optional<std::string> revision_of;  // as GraphRagQuery::revision_of
    bool operator==(const AgentRequest&) const = default;
};

enum class QueryMode { kAuto, kGraphRag, kDocumentRag, kAgent };
std::string_view to_string(QueryMode mode) noexcept;  // "auto", "graph-rag", ...
std::optional<QueryMode> query_mode_from_string(std::string_view) noexcept;

// A request id (QueryRequest::request_id, the gateway's X-Request-ID) is 1 to this many
// printable ASCII characters, no spaces: it goes into logs and traces as it is.
inline constexpr std::size_t kMaxRequestIdBytes = 128;
bool usable_request_id(std::string_view id) noexcept;

// True when `question` holds something to search for: an ASCII letter or digit, or a non-ASCII
// character (a letter of another script). "...", "?!" hold none (issue 31: they reached the
// vector search as a zero vector).
bool has_words(std::string_view question) noexcept;

// The routed entry point (the `query` worker, docs/query.md). An unknown mode is a decode
// error. `session_id` is recorded on the run's Question and passed on to the agent.
struct QueryRequest {
    std::string query;
    QueryMode mode = QueryMode::kAuto;
    std::string collection;
    bool streaming = false;
    std::string session_id;  // the conversation this question is a turn of ("" = none)
    // The HTTP request it came in with (the gateway's X-Request-ID; "" = none): on the Question
    // as gb:requestId. 1-128 printable ASCII characters (kMaxRequestIdBytes).
    std::string request_id;
    // As GraphRagQuery::revision_of: recorded on the router's own Question only, never passed
    // to the engines it calls (their runs are sub-runs of this one).
    std::optional<std::string> revision_of;
    // Below this calibrated confidence the router's answer says it does not know
    // (docs/confidence.md §4), once its confidence is final (after the engines' disagreement
    // lowered it); the engines are asked with 0. 0 to 1, else InvalidRequest; absent: the
    // worker's query.min_confidence.
    std::optional<double> min_confidence{};
    bool operator==(const QueryRequest&) const = default;
};

// ---- responses ----------------------------------------------------------------------------

enum class RagMessageType { kChunk, kExplain, kError };
std::string_view to_string(RagMessageType type) noexcept;

// A span [start, end) of an answer, in Unicode code points.
struct AnswerSpan {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    bool operator==(const AnswerSpan&) const = default;
};

// One source an answer cites, as a reader wants it: numbered (`[1]`) in order of first
// appearance in the answer text, with where it came from and what it says.
struct RagCitation {
    std::uint32_t n = 0;    // from 1
    std::string id;         // the synthesis template's id ("e2", "c1")
    std::string selection;  // the explain URI of the edge or chunk selection
    std::string kind;       // "edge" or "chunk"
    std::string document;   // the document (or file) it came from; "" when not known
    std::string title;      // the document's title, when known
    std::string chunk;      // the chunk; "" for a fact loaded from a whole file
    std::optional<std::uint64_t> char_offset;  // the cited text in its document (code points)
    std::optional<std::uint64_t> char_end;
    std::uint32_t tier = 0;         // data tier (1..4; 0: not known)
    std::string text;               // the cited fact ("s p o", labels) or sentence
    std::vector<AnswerSpan> spans;  // where the answer cites it
    // An edge's fact in parts, its labels as `text` joins them ("Greyhollow Light", "was
    // designed by", "Ilse Varrow"): a reader can compare a fact's subject and predicate with a
    // document's sentence without splitting `text`. Absent for a chunk and from older writers.
    std::optional<std::string> subject{};
    std::optional<std::string> predicate{};
    std::optional<std::string> object{};
    // Freshness (docs/knowledge.md §3): when the source was loaded, its own date when known,
    // and, when its collection declares a revalidation age (`max_age`, "90d"), that age and
    // whether the source is past it.
    std::optional<std::string> loaded_at{};
    std::optional<std::string> date{};
    std::optional<std::string> max_age{};
    std::optional<bool> stale{};
    bool operator==(const RagCitation&) const = default;
};

struct RagResponse {
    RagMessageType message_type = RagMessageType::kChunk;
    std::string response;
    std::string explain_id;
    std::string explain_graph;
    std::vector<Triple> explain_triples;
    bool end_of_stream = false;   // the answer text is complete
    bool end_of_session = false;  // the request is complete
    std::uint64_t in_token = 0;
    std::uint64_t out_token = 0;
    std::string model;
    std::vector<std::string> sources;
    std::optional<base::Error> error;  // wire: {"type": "<base::ErrorType>", "message": "..."}
    // FINAL: the short answer alone ("" when the evidence does not decide; absent when the
    // synthesis template gave none) and the explain URIs of the selections it came from.
    std::optional<std::string> answer;
    std::vector<std::string> answer_selections;
    std::vector<RagCitation> citations;  // FINAL: the answer's cited sources, by n
    bool operator==(const RagResponse&) const = default;
};

enum class AgentMessageType { kThought, kObservation, kAnswer, kExplain, kError };
std::string_view to_string(AgentMessageType type) noexcept;

struct AgentResponse {
    AgentMessageType message_type = AgentMessageType::kAnswer;
    std::string content;
    bool end_of_message = false;
    bool end_of_dialog = false;
    std::string message_id;
    std::string explain_id;
    std::string explain_graph;
    std::vector<Triple> explain_triples;
    std::optional<base::Error> error;
    bool operator==(const AgentResponse&) const = default;
};

// ---- knowledge store ----------------------------------------------------------------------

// A triple pattern: absent positions match anything.
struct TriplePattern {
    std::optional<Term> s;
    std::optional<Term> p;
    std::optional<Term> o;
    std::optional<std::string> g;
    bool operator==(const TriplePattern&) const = default;
};

struct TriplesQuery {
    std::optional<Term> s;
    std::optional<Term> p;
    std::optional<Term> o;
    std::optional<std::string> g;
    std::uint32_t limit = 0;
    std::string collection;
    bool operator==(const TriplesQuery&) const = default;
};

// Many patterns in one round trip (one request per traversal hop, DESIGN §2).
struct TriplesQueryBatch {
    std::vector<TriplePattern> patterns;
    std::uint32_t limit = 0;  // per pattern
    std::string collection;
    // Also answer the labels of every matched triple's terms (TriplesBatchResponse::labels), as
    // the `labels` operation gives them: graph RAG's traversal needs no labels request of its own.
    bool labels = false;
    // Answer at most this many of each pattern's matches (the first, in the store's order: a
    // prefix of what `limit` alone answers), and each pattern's count of matches up to `limit`
    // (TriplesBatchResponse::counts): a caller that keeps only some of them still learns which
    // patterns filled `limit`. Absent: every match up to `limit`, no counts.
    std::optional<std::uint32_t> rows{};
    bool operator==(const TriplesQueryBatch&) const = default;
};

struct TriplesResponse {
    std::vector<Triple> triples;
    bool operator==(const TriplesResponse&) const = default;
};

// results[i] answers patterns[i]. With TriplesQueryBatch::labels, labels[i] names the terms of
// results[i]: three per triple (subject, predicate, object), 3 × results[i].size() in all.
struct TriplesBatchResponse {
    std::vector<std::vector<Triple>> results;
    std::optional<std::vector<std::vector<std::string>>> labels{};  // none unless asked
    // With TriplesQueryBatch::rows: counts[i] is patterns[i]'s number of matches up to `limit`
    // (results[i] holds the first `rows` of them).
    std::optional<std::vector<std::uint32_t>> counts{};
    bool operator==(const TriplesBatchResponse&) const = default;
};

// ---- embeddings and retrieval ---------------------------------------------------------------

struct EmbeddingsRequest {
    std::vector<std::string> texts;
    bool operator==(const EmbeddingsRequest&) const = default;
};

struct EmbeddingsResponse {
    std::vector<std::vector<double>> vectors;
    std::string model;
    std::uint32_t dim = 0;
    bool operator==(const EmbeddingsResponse&) const = default;
};

struct GraphEmbeddingsQuery {
    std::vector<std::vector<double>> vectors;
    std::uint32_t limit = 0;
    std::string collection;
    bool operator==(const GraphEmbeddingsQuery&) const = default;
};

struct EntityMatch {
    Term entity;
    double score = 0.0;
    bool operator==(const EntityMatch&) const = default;
};

struct GraphEmbeddingsResponse {
    std::vector<EntityMatch> entities;
    bool operator==(const GraphEmbeddingsResponse&) const = default;
};

// The `entities-batch` answer to a GraphEmbeddingsQuery: results[i] are the matches of vectors[i]
// alone (each best first, up to the limit), where `entities` merges all vectors into one list.
struct GraphEmbeddingsBatchResponse {
    std::vector<std::vector<EntityMatch>> results;
    bool operator==(const GraphEmbeddingsBatchResponse&) const = default;
};

struct DocumentEmbeddingsQuery {
    std::vector<std::vector<double>> vectors;
    std::uint32_t limit = 0;
    std::string collection;
    bool operator==(const DocumentEmbeddingsQuery&) const = default;
};

struct ChunkKeywordQuery {
    std::string query;
    std::uint32_t limit = 0;
    std::string collection;
    bool operator==(const ChunkKeywordQuery&) const = default;
};

struct ChunkMatch {
    std::string chunk_id;
    double score = 0.0;
    bool operator==(const ChunkMatch&) const = default;
};

// The answer to DocumentEmbeddingsQuery and ChunkKeywordQuery.
struct ChunkMatchResponse {
    std::vector<ChunkMatch> chunks;
    bool operator==(const ChunkMatchResponse&) const = default;
};

struct ChunkFetchRequest {
    std::vector<std::string> chunk_ids;
    std::string collection;
    bool operator==(const ChunkFetchRequest&) const = default;
};

struct Chunk {
    std::string chunk_id;
    std::string document_id;
    std::string text;
    std::uint64_t char_offset = 0;  // of the chunk in its document, in characters
    std::uint64_t char_length = 0;
    std::uint32_t ordinal = 0;  // its place in the document, from 0
    std::string document_title;
    std::uint32_t tier = 0;  // the document's data tier (1..4; 0: not known)
    // The document's freshness, as FactSource's (absent from a store that does not say).
    std::optional<std::string> loaded_at{};
    std::optional<std::string> date{};
    std::optional<std::string> max_age{};
    std::optional<bool> stale{};
    bool operator==(const Chunk&) const = default;
};

struct ChunkFetchResponse {
    std::vector<Chunk> chunks;
    bool operator==(const ChunkFetchResponse&) const = default;
};

// ---- knowledge store: loading, provenance, labels, stats (docs/knowledge.md) -----------------

// Data tiers of a source (issue 4): how far its facts can be trusted.
inline constexpr std::uint32_t kTierAuthoritative = 1;
inline constexpr std::uint32_t kTierVerified = 2;
inline constexpr std::uint32_t kTierCrowdSourced = 3;
inline constexpr std::uint32_t kTierInferred = 4;
// A load that names no tier: not known to be checked, so not above crowd-sourced.
inline constexpr std::uint32_t kDefaultTier = kTierCrowdSourced;

// Where loaded knowledge came from.
struct SourceInfo {
    std::string uri;         // file:///… of a file, or a document's URI
    std::string path;        // as given to `glassbox load` (empty when not a file)
    std::string media_type;  // "application/n-triples", "text/markdown", …
    std::uint32_t tier = 0;  // 0: kDefaultTier
    std::string loaded_at;   // xsd:dateTime; empty: the store's clock
    // The source's own date (xsd:date or xsd:dateTime: when it was made or last changed, as the
    // source itself says); empty: not known.
    std::string date{};
    bool operator==(const SourceInfo&) const = default;
};

// One batch of a file's statements, as N-Quads text (compact and standard; the store parses it).
struct LoadTriplesRequest {
    std::string collection;
    SourceInfo source;
    std::string nquads;
    bool operator==(const LoadTriplesRequest&) const = default;
};

struct LoadTriplesResponse {
    std::uint64_t statements = 0;  // in the batch
    std::uint64_t added = 0;       // new facts
    std::uint64_t present = 0;     // facts already stored (from this or another source)
    bool operator==(const LoadTriplesResponse&) const = default;
};

struct ChunkLoad {
    std::uint32_t ordinal = 0;
    std::uint64_t char_offset = 0;  // in characters (code points) of the document text
    std::uint64_t char_length = 0;
    std::string text;
    bool operator==(const ChunkLoad&) const = default;
};

struct DocumentLoad {
    std::string uri;
    std::string title;
    SourceInfo source;  // path, media type, tier, loaded-at of the document
    std::string text;
    std::vector<ChunkLoad> chunks;
    bool operator==(const DocumentLoad&) const = default;
};

// Documents with their chunks; the store writes them, then embeds and indexes the new chunks
// through the `embeddings` service unless `embed` is false.
struct LoadDocumentsRequest {
    std::string collection;
    std::vector<DocumentLoad> documents;
    bool embed = true;
    bool operator==(const LoadDocumentsRequest&) const = default;
};

struct LoadDocumentsResponse {
    std::uint64_t documents_added = 0;
    std::uint64_t documents_replaced = 0;
    std::uint64_t documents_unchanged = 0;
    std::uint64_t chunks_written = 0;
    std::uint64_t chunks_embedded = 0;
    bool operator==(const LoadDocumentsResponse&) const = default;
};

// Embeds and indexes every entity and chunk that has no vector yet.
struct IndexRequest {
    std::string collection;
    bool operator==(const IndexRequest&) const = default;
};

struct IndexResponse {
    std::uint64_t entities_indexed = 0;
    std::uint64_t chunks_indexed = 0;
    std::string model;
    std::uint32_t dim = 0;
    bool operator==(const IndexResponse&) const = default;
};

struct FactSourcesRequest {
    std::string collection;
    std::vector<Triple> triples;
    bool operator==(const FactSourcesRequest&) const = default;
};

struct FactSource {
    std::string source;                   // the file or chunk URI the fact was loaded from
    std::string kind;                     // "file", "chunk" or "document"
    std::optional<std::string> document;  // a chunk's document
    std::uint32_t tier = 0;
    std::string loaded_at;
    std::optional<std::string> date{};  // the source's own date, when known
    // The collection's revalidation age ("90d") when it declares one, and whether the source is
    // past it (its own date, else loaded_at, older than max_age) when the store answered.
    std::optional<std::string> max_age{};
    std::optional<bool> stale{};
    bool operator==(const FactSource&) const = default;
};

// sources[i] answers triples[i]; an unknown fact has none.
struct FactSourcesResponse {
    std::vector<std::vector<FactSource>> sources;
    bool operator==(const FactSourcesResponse&) const = default;
};

struct LabelsRequest {
    std::string collection;
    std::vector<Term> terms;
    bool operator==(const LabelsRequest&) const = default;
};

// labels[i] names terms[i]: rdfs:label, else the IRI's local name, else the literal's value.
struct LabelsResponse {
    std::vector<std::string> labels;
    bool operator==(const LabelsResponse&) const = default;
};

// Vector and keyword retrieval fused by reciprocal rank.
struct HybridChunkQuery {
    std::string query;
    std::vector<std::vector<double>> vectors;
    std::uint32_t limit = 0;
    std::string collection;
    bool operator==(const HybridChunkQuery&) const = default;
};

struct StoreStatsRequest {
    std::string collection;
    // Only the sparql_mirror part (no collection is opened): what `glassbox status` reads.
    bool sparql_mirror_only = false;
    bool operator==(const StoreStatsRequest&) const = default;
};

// One collection as the store's SPARQL mirror sees it (docs/knowledge.md, "The SPARQL mirror").
struct SparqlMirrorCollection {
    std::string name;
    std::int64_t version = 0;   // the collection's change number
    std::int64_t mirrored = 0;  // the number its graph in the engine was last sent at; 0: never
    bool operator==(const SparqlMirrorCollection&) const = default;
};

// The store's mirror of its collections into a SPARQL engine, in `stats`.
struct StoreSparqlMirrorStats {
    bool configured = false;                          // sparql.endpoint is set
    std::vector<SparqlMirrorCollection> collections;  // by name; empty when not configured
    std::uint64_t pending = 0;   // collections not sent at their version, and graphs to delete
    std::uint64_t failures = 0;  // sends and deletes that failed since the worker started
    std::string last_error;      // the last failure's error; "" when none failed
    bool operator==(const StoreSparqlMirrorStats&) const = default;
};

struct StoreStats {
    std::string collection;
    std::uint64_t quads = 0;
    std::uint64_t subjects = 0;
    std::uint64_t predicates = 0;
    std::uint64_t objects = 0;
    std::uint64_t terms = 0;
    std::uint64_t graphs = 0;
    std::uint64_t sources = 0;
    std::map<std::string, std::uint64_t> facts_per_tier;  // "1".."4"
    std::uint64_t documents = 0;
    std::uint64_t chunks = 0;
    std::uint64_t entity_vectors = 0;
    std::uint64_t chunk_vectors = 0;
    std::string model;  // of the stored vectors
    std::uint32_t dim = 0;
    std::uint64_t bytes_on_disk = 0;
    // Documents and chunks by their document's tier ("1".."4"; absent: none), and the newest
    // loaded_at of any source or document ("" when nothing records one).
    std::map<std::string, std::uint64_t> documents_per_tier;
    std::map<std::string, std::uint64_t> chunks_per_tier;
    std::string last_loaded;
    // The collection's revalidation age ("" when it declares none) and how many of its sources
    // (files and documents) are past it.
    std::string max_age;
    std::uint64_t stale_sources = 0;
    std::optional<StoreSparqlMirrorStats> sparql_mirror;
    bool operator==(const StoreStats&) const = default;
};

// `collections` ({} -> CollectionList) and `collection-delete` (CollectionDeleteRequest ->
// CollectionDeleted): the collections of a home as things a user manages (docs/collections.md).
struct CollectionSummary {
    std::string collection;
    std::uint64_t facts = 0;
    std::uint64_t entities = 0;  // distinct subjects
    std::uint64_t documents = 0;
    std::uint64_t chunks = 0;
    std::map<std::string, std::uint64_t> documents_per_tier;  // "1".."4"
    std::map<std::string, std::uint64_t> chunks_per_tier;
    std::uint64_t entity_vectors = 0;
    std::uint64_t chunk_vectors = 0;
    std::uint64_t bytes_on_disk = 0;
    std::string last_loaded;          // xsd:dateTime, "" when not known
    std::string max_age;              // the revalidation age ("90d"), "" when none is declared
    std::uint64_t stale_sources = 0;  // sources (files, documents) past max_age
    bool operator==(const CollectionSummary&) const = default;
};

struct CollectionList {
    std::vector<CollectionSummary> collections;  // by name
    bool truncated = false;                      // more collections than one reply lists
    bool operator==(const CollectionList&) const = default;
};

struct CollectionDeleteRequest {
    std::string collection;  // required: no default collection is deleted by omission
    bool operator==(const CollectionDeleteRequest&) const = default;
};

// `collection-set` (CollectionSetRequest -> CollectionSummary): declares a collection's
// revalidation age. `max_age` is a duration ("90d", "12h", "2w"), "none" to remove it, or "" to
// leave it as it is; `create` makes the collection when it does not exist (else NotFound).
struct CollectionSetRequest {
    std::string collection;
    std::string max_age;
    bool create = false;
    bool operator==(const CollectionSetRequest&) const = default;
};

struct CollectionDeleted {
    CollectionSummary removed;  // what the collection held when it was deleted
    bool operator==(const CollectionDeleted&) const = default;
};

// ---- changing and retracting knowledge (docs/knowledge.md, "Changing and retracting") --------

// `forget-source` {collection, source, actor}, `forget-fact` {collection, fact, actor} and
// `forget-document` {collection, document, actor} -> KnowledgeChangeSummary. `actor` names who
// asked (the CLI sends the OS user name); it goes into the change's trace.
struct ForgetRequest {
    std::string collection;
    std::string source;            // forget-source: the source's URI
    std::string document;          // forget-document: the document's URI
    std::optional<Triple> fact{};  // forget-fact: the fact (its "g" the named graph, if any)
    std::string actor{};
    bool operator==(const ForgetRequest&) const = default;
};

// What a change did to one source (a file a replacing load replaced).
struct SourceChangeSummary {
    std::string source;
    std::uint64_t added = 0;      // facts the source states now and did not before
    std::uint64_t removed = 0;    // facts it stated before that are no longer stored
    std::uint64_t kept = 0;       // facts it no longer states that another source still does
    std::uint64_t unchanged = 0;  // facts it states as before (their rows untouched)
    bool operator==(const SourceChangeSummary&) const = default;
};

// The reply of a forget op, and the "change" of a replacing load-commit's reply.
struct KnowledgeChangeSummary {
    std::string kind;   // "replace" | "forget-source" | "forget-fact" | "forget-document"
    std::string trace;  // the change's trace: its run's Question URI
    std::string collection;
    std::uint64_t facts_added = 0;
    std::uint64_t facts_removed = 0;  // no longer stored
    std::uint64_t facts_kept = 0;     // lost a source, kept by another
    std::uint64_t facts_unchanged = 0;
    bool removed_listed = true;                // the trace lists every removed fact
    std::vector<SourceChangeSummary> sources;  // replace: one per replaced source
    std::vector<std::string> removed_sources;  // sources, documents, chunks no longer stored
    bool operator==(const KnowledgeChangeSummary&) const = default;
};

// ---- LLM ------------------------------------------------------------------------------------

struct LlmRequest {
    std::string template_name;                     // wire: "template"
    std::map<std::string, std::string> variables;  // an object of strings
    bool streaming = false;
    bool operator==(const LlmRequest&) const = default;
};

struct LlmResponse {
    std::string text;
    std::optional<nlohmann::json> json;  // set when the template asks for JSON output
    std::string model;
    std::uint64_t in_token = 0;
    std::uint64_t out_token = 0;
    bool end_of_stream = false;
    // Templates with the answer contract (docs/llm.md): the short answer ("" when the evidence
    // does not decide) and the markers of the Answer line; `text` is then the rest of the reply.
    std::optional<std::string> answer;
    std::vector<std::string> answer_ids;
    bool operator==(const LlmResponse&) const = default;
};

// ---- echo (diagnostic service) ---------------------------------------------------------------

// {question, ...any}: every other field is kept, unparsed, in `extra` (a JSON object).
struct EchoRequest {
    std::string question;
    std::optional<std::string> parent_uri;
    nlohmann::json extra = nlohmann::json::object();
    bool operator==(const EchoRequest&) const = default;
};

// ---- explain message (docs/protocol.md §8) ---------------------------------------------------

enum class TraceStatus { kNone, kComplete, kError, kIncomplete };
std::string_view to_string(TraceStatus status) noexcept;  // "", "complete", "error", "incomplete"
std::optional<TraceStatus> trace_status_from_string(std::string_view) noexcept;

struct ExplainMessage {
    std::string session;  // the session URI (the run's Question URI)
    std::uint64_t seq = 0;
    std::string service;
    std::string worker;
    std::optional<std::string> parent_uri;
    std::string explain_id;  // the step URI
    std::string explain_graph{vocab::kRetrievalGraph};
    std::vector<Triple> explain_triples;
    bool end_of_trace = false;
    TraceStatus trace_status = TraceStatus::kNone;
    std::optional<base::Error> error;
    bool operator==(const ExplainMessage&) const = default;
};

// ---- codecs -----------------------------------------------------------------------------------

nlohmann::json encode(const base::Error& error);
nlohmann::json encode(const GraphRagQuery& m);
nlohmann::json encode(const DocumentRagQuery& m);
nlohmann::json encode(const AgentHistoryStep& m);
nlohmann::json encode(const AgentRequest& m);
nlohmann::json encode(const QueryRequest& m);
nlohmann::json encode(const RagResponse& m);
nlohmann::json encode(const AgentResponse& m);
nlohmann::json encode(const TriplePattern& m);
nlohmann::json encode(const TriplesQuery& m);
nlohmann::json encode(const TriplesQueryBatch& m);
nlohmann::json encode(const TriplesResponse& m);
nlohmann::json encode(const TriplesBatchResponse& m);
nlohmann::json encode(const EmbeddingsRequest& m);
nlohmann::json encode(const EmbeddingsResponse& m);
nlohmann::json encode(const GraphEmbeddingsQuery& m);
nlohmann::json encode(const GraphEmbeddingsResponse& m);
nlohmann::json encode(const GraphEmbeddingsBatchResponse& m);
nlohmann::json encode(const DocumentEmbeddingsQuery& m);
nlohmann::json encode(const ChunkKeywordQuery& m);
nlohmann::json encode(const ChunkMatchResponse& m);
nlohmann::json encode(const ChunkFetchRequest& m);
nlohmann::json encode(const ChunkFetchResponse& m);
nlohmann::json encode(const SourceInfo& m);
nlohmann::json encode(const LoadTriplesRequest& m);
nlohmann::json encode(const LoadTriplesResponse& m);
nlohmann::json encode(const ChunkLoad& m);
nlohmann::json encode(const DocumentLoad& m);
nlohmann::json encode(const LoadDocumentsRequest& m);
nlohmann::json encode(const LoadDocumentsResponse& m);
nlohmann::json encode(const IndexRequest& m);
nlohmann::json encode(const IndexResponse& m);
nlohmann::json encode(const FactSourcesRequest& m);
nlohmann::json encode(const FactSource& m);
nlohmann::json encode(const FactSourcesResponse& m);
nlohmann::json encode(const LabelsRequest& m);
nlohmann::json encode(const LabelsResponse& m);
nlohmann::json encode(const HybridChunkQuery& m);
nlohmann::json encode(const StoreStatsRequest& m);
nlohmann::json encode(const StoreStats& m);
nlohmann::json encode(const SparqlMirrorCollection& m);
nlohmann::json encode(const StoreSparqlMirrorStats& m);
nlohmann::json encode(const CollectionSummary& m);
nlohmann::json encode(const CollectionList& m);
nlohmann::json encode(const CollectionDeleteRequest& m);
nlohmann::json encode(const CollectionSetRequest& m);
nlohmann::json encode(const CollectionDeleted& m);
nlohmann::json encode(const ForgetRequest& m);
nlohmann::json encode(const SourceChangeSummary& m);
nlohmann::json encode(const KnowledgeChangeSummary& m);
nlohmann::json encode(const LlmRequest& m);
nlohmann::json encode(const LlmResponse& m);
nlohmann::json encode(const EchoRequest& m);
nlohmann::json encode(const ExplainMessage& m);

// Specialised for every message type above; other T do not link.
template <typename T>
base::Result<T> decode(const nlohmann::json& value);

// decode<ExplainMessage> (which calls this), also counting the IRIs it rewrote: every IRI of an
// explain message (session, explain_id, parent_uri, graphs, and each term's IRIs and datatypes,
// quoted triples included) goes through explain::writable_iri, so a third-party worker's IRI that
// N-Triples rejects enters a trace percent-encoded instead of as it came. Empty fields stay empty.
base::Result<ExplainMessage> decode_explain(const nlohmann::json& value,
                                            std::size_t& iris_rewritten);

template <typename T>
base::Result<T> decode_body(std::string_view text) {
    auto parsed = parse_untrusted_json(text);
    if (!parsed.ok()) return std::move(parsed).error();
    return decode<T>(parsed.value());
}

#define GLASSBOX_DECLARE_DECODE(T) \
    template <>                    \
    base::Result<T> decode<T>(const nlohmann::json& value);
GLASSBOX_DECLARE_DECODE(GraphRagQuery)
GLASSBOX_DECLARE_DECODE(DocumentRagQuery)
GLASSBOX_DECLARE_DECODE(AgentHistoryStep)
GLASSBOX_DECLARE_DECODE(AgentRequest)
GLASSBOX_DECLARE_DECODE(QueryRequest)
GLASSBOX_DECLARE_DECODE(RagResponse)
GLASSBOX_DECLARE_DECODE(AgentResponse)
GLASSBOX_DECLARE_DECODE(TriplePattern)
GLASSBOX_DECLARE_DECODE(TriplesQuery)
GLASSBOX_DECLARE_DECODE(TriplesQueryBatch)
GLASSBOX_DECLARE_DECODE(TriplesResponse)
GLASSBOX_DECLARE_DECODE(TriplesBatchResponse)
GLASSBOX_DECLARE_DECODE(EmbeddingsRequest)
GLASSBOX_DECLARE_DECODE(EmbeddingsResponse)
GLASSBOX_DECLARE_DECODE(GraphEmbeddingsQuery)
GLASSBOX_DECLARE_DECODE(GraphEmbeddingsResponse)
GLASSBOX_DECLARE_DECODE(GraphEmbeddingsBatchResponse)
GLASSBOX_DECLARE_DECODE(DocumentEmbeddingsQuery)
GLASSBOX_DECLARE_DECODE(ChunkKeywordQuery)
GLASSBOX_DECLARE_DECODE(ChunkMatchResponse)
GLASSBOX_DECLARE_DECODE(ChunkFetchRequest)
GLASSBOX_DECLARE_DECODE(ChunkFetchResponse)
GLASSBOX_DECLARE_DECODE(LoadTriplesRequest)
GLASSBOX_DECLARE_DECODE(LoadTriplesResponse)
GLASSBOX_DECLARE_DECODE(LoadDocumentsRequest)
GLASSBOX_DECLARE_DECODE(LoadDocumentsResponse)
GLASSBOX_DECLARE_DECODE(IndexRequest)
GLASSBOX_DECLARE_DECODE(IndexResponse)
GLASSBOX_DECLARE_DECODE(FactSourcesRequest)
GLASSBOX_DECLARE_DECODE(FactSourcesResponse)
GLASSBOX_DECLARE_DECODE(LabelsRequest)
GLASSBOX_DECLARE_DECODE(LabelsResponse)
GLASSBOX_DECLARE_DECODE(HybridChunkQuery)
GLASSBOX_DECLARE_DECODE(StoreStatsRequest)
GLASSBOX_DECLARE_DECODE(StoreStats)
GLASSBOX_DECLARE_DECODE(SparqlMirrorCollection)
GLASSBOX_DECLARE_DECODE(StoreSparqlMirrorStats)
GLASSBOX_DECLARE_DECODE(ForgetRequest)
GLASSBOX_DECLARE_DECODE(KnowledgeChangeSummary)
GLASSBOX_DECLARE_DECODE(LlmRequest)
GLASSBOX_DECLARE_DECODE(LlmResponse)
GLASSBOX_DECLARE_DECODE(EchoRequest)
GLASSBOX_DECLARE_DECODE(ExplainMessage)
#undef GLASSBOX_DECLARE_DECODE

}  // namespace glassbox::schema
