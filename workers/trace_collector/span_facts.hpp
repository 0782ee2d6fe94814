// The facts of one stored event that its run's OpenTelemetry spans use (docs/traces.md,
// "OpenTelemetry export"), kept beside the event in `events.span` while the store exports, so the
// exporter builds a run's spans from a few short records instead of reading back and decoding
// every triple of the run (a graph-RAG run's ~1,200, most of them reified edges no span uses).
//
// An event's record holds, in triple order, the triples of its message that state:
//   - of its own step (subject = the event's explain_id) or of the run (subject = the session):
//     rdf:type, prov:generatedAtTime, gb:durationMs, gb:inputTokens, gb:outputTokens,
//     gb:modelName, gb:action, gb:toolStatus, prov:wasDerivedFrom, gb:exploredEdge,
//     gb:retrievedChunk, prov:used and the embeddings call (gb:embeddingModel,
//     gb:embeddingInputs, gb:embeddingDimensions, gb:embeddingStartedAt,
//     gb:embeddingDurationMs);
//   - gb:score of an item the step retrieved earlier in the same message.
// That is what a step's message says of it: every engine writes a step's facts, and the scores of
// what it retrieved, in that step's own message. A run with any event stored without a record
// (the store did not export then, or a worker that sends a step's facts in another message has
// them found anyway, see otel_spans.cpp) is read back from its triples instead.
//
// The record is text: one line per fact, `<code><subject>\t<object>`, where a subject is `.`
// (the explain_id), `^` (the session) or an IRI, an IRI is `~` + what follows the session's
// prefix (`urn:glassbox:<uuid>:`) or `<` + itself, a literal is `"` + its value; `\`, tab, newline
// and NUL are escaped as `\\`, `\t`, `\n`, `\0`. Consecutive retrieved items stem+i, stem+i+1, …
// are one line `R<subject>\t<stem>\t<first>\t<last>` (500 explored edges take one line).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::trace::detail {

// The predicates the spans read.
enum class SpanFact : char {
    kType = 't',
    kGeneratedAt = 'g',
    kDuration = 'd',
    kInputTokens = 'i',
    kOutputTokens = 'o',
    kModel = 'm',
    kAction = 'a',
    kToolStatus = 's',
    kDerivedFrom = 'f',
    kRetrieved = 'r',
    kScore = 'c',
    kUsed = 'u',
    kEmbeddingModel = 'E',
    kEmbeddingInputs = 'N',
    kEmbeddingDimensions = 'D',
    kEmbeddingStartedAt = 'S',
    kEmbeddingDuration = 'L',
};

// The fact predicate `iri` is, if it is one.
bool span_fact_of(std::string_view iri, SpanFact& fact) noexcept;

// One fact as a record holds it and as the spans read it: subject IRI, object (an IRI or a
// literal's value).
struct SpanFactTriple {
    SpanFact fact = SpanFact::kType;
    std::string_view s;
    std::string_view o;
    bool o_is_iri = false;
};

// Builds the record of one event, triple by triple.
class SpanFactWriter {
public:
    // Starts the record of an event of `session` whose step is `explain_id`.
    void begin(std::string_view session, std::string_view explain_id);
    // One triple of the event's message (subject and predicate IRIs, the object an IRI or a
    // literal's value); the ones the spans do not use are skipped after a length check or two.
    void see(std::string_view s, std::string_view p, std::string_view o, bool o_is_iri);
    // The record (empty when the event states no fact the spans use); valid until begin().
    const std::string& finish();

private:
    void flush_range();
    void put_subject(std::string_view s);
    void put_iri(std::string_view iri);
    void put_escaped(std::string_view text);
    bool retrieved_here(std::string_view iri) const;

    std::string session_;
    std::string explain_id_;
    std::string_view prefix_;  // of session_: through the last ':'
    std::string out_;
    // The items the step retrieved so far, in order: numbered ones (stem + decimal i) as runs
    // stem+first … stem+last, any other as itself (stem, not numbered); the last run is written
    // when the next item does not extend it, or by finish().
    struct Retrieved {
        std::string stem;
        std::uint64_t first = 0;
        std::uint64_t last = 0;
        bool numbered = false;
    };
    std::vector<Retrieved> retrieved_;
    bool range_open_ = false;
};

// A run of retrieved items of subject `s`: stem+first … stem+last, in order.
struct RetrievedRange {
    std::string_view s;
    std::string_view stem;
    std::uint64_t first = 0;
    std::uint64_t last = 0;
};

// Calls `each` for every fact of `record` (an event of `session` with step `explain_id`) in
// order, a range as its items, unless `range` is given: then a range is one call of it (the
// exporter appends 500 explored edges at once). False when the record is not one
// SpanFactWriter writes (then the caller reads the run's triples instead).
bool each_span_fact(std::string_view record, std::string_view session, std::string_view explain_id,
                    const std::function<void(const SpanFactTriple&)>& each,
                    const std::function<void(const RetrievedRange&)>& range = {});

}  // namespace glassbox::trace::detail
