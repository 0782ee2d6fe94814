// A stored run as OpenTelemetry spans (docs/traces.md, "OpenTelemetry export"): the session rows
// of the run and its sub-runs, and of each run's stored triples only what the spans need. It runs
// for every exported run in the collector: a triple's predicate and subject are told from its
// text first (most triples, the reified edges and chunks, are skipped so), and the ones the spans
// use are read with the explain scan's triple reader (a JSON tree only for a record that is not
// canonical).
#include <algorithm>
#include <charconv>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "base/time_format.hpp"
#include "schema/json_fast.hpp"
#include "schema/otel_ids.hpp"
#include "schema/term_json.hpp"
#include "schema/untrusted_json.hpp"
#include "schema/vocabulary.hpp"
#include "workers/trace_collector/explain_scan.hpp"
#include "workers/trace_collector/span_facts.hpp"
#include "workers/trace_collector/trace_store.hpp"
#include "workers/trace_collector/trace_store_detail.hpp"

namespace glassbox::trace {

namespace otel {

const AttributeValue* Span::attribute(std::string_view key) const noexcept {
    for (const auto& a : attributes) {
        if (a.key == key) return &a.value;
    }
    return nullptr;
}

}  // namespace otel

using base::ErrorType;
using base::make_error;
using base::Result;
using otel::Attribute;
using otel::Span;
using otel::SpanKind;
using storage::sql::Connection;
using storage::sql::Row;

namespace {

namespace v = schema::vocab;

// Runs nested deeper than this are not followed (show's bound); parent chains longer than this
// are a cycle or a damaged store.
constexpr int kMaxRunDepth = 32;
constexpr std::string_view kToolSpanSuffix = "#execute_tool";
constexpr std::string_view kEmbeddingsSpanSuffix = "#embeddings";

// One session row.
struct RunRow {
    std::int64_t id = 0;
    std::string uri;
    std::string kind;
    std::string parent;  // the calling run's session URI; empty for a top-level run
    std::optional<std::int64_t> started;
    std::optional<std::int64_t> ended;
    std::int64_t last_event_at = 0;
    std::string status;
    std::string error;
    std::string collection;
    std::string conversation;
};

// A step's retrieved items, in order, as the span facts hold them: a run of numbered items
// stem+first … stem+last is kept as that run (a graph traversal's 500 explored edges are one), so
// the retrieval span's documents are written from it with each stem escaped once and no string
// per item.
class RetrievedItems {
public:
    struct Piece {
        std::string stem;  // the IRI itself when not numbered
        std::uint64_t first = 0;
        std::uint64_t last = 0;
        bool numbered = false;
        std::size_t size() const noexcept { return numbered ? last - first + 1 : 1; }
    };
    void add(std::string_view iri) { pieces_.push_back(Piece{std::string(iri), 0, 0, false}); }
    void add_range(std::string_view stem, std::uint64_t first, std::uint64_t last) {
        pieces_.push_back(Piece{std::string(stem), first, last, true});
    }
    const std::vector<Piece>& pieces() const noexcept { return pieces_; }
    std::size_t size() const noexcept {
        std::size_t n = 0;
        for (const auto& piece : pieces_) n += piece.size();
        return n;
    }

private:
    std::vector<Piece> pieces_;
};

// What the spans need of one step (a stored event's explain_id other than the run's).
struct StepFacts {
    std::string iri;
    std::string type;  // the local name of its gb: class (Grounding, Analysis, ...)
    bool tool_use = false;
    std::optional<std::int64_t> generated_ms;
    std::int64_t duration_ms = 0;
    std::optional<std::int64_t> input_tokens;
    std::optional<std::int64_t> output_tokens;
    std::string model;
    std::string tool;                  // gb:action
    std::string tool_status;           // gb:toolStatus (an Observation)
    std::vector<std::string> derived;  // prov:wasDerivedFrom objects (an Observation's analysis)
    RetrievedItems retrieved;          // gb:exploredEdge / gb:retrievedChunk, in order
    // The embeddings call it made (gb:embedding*): a span when its start is known.
    std::string embedding_model;
    std::optional<std::int64_t> embedding_inputs;
    std::optional<std::int64_t> embedding_dimensions;
    std::optional<std::int64_t> embedding_started_ms;
    std::int64_t embedding_duration_ms = 0;
};

struct RunFacts {
    RunRow row;
    std::vector<StepFacts> steps;                    // in event order
    std::string calling_step;                        // prov:used of its Question
    std::unordered_map<std::string, double> scores;  // gb:score of any subject
};

using detail::SpanFact;

std::optional<std::int64_t> integer_of(std::string_view digits) {
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    return n;
}

std::optional<double> double_of(std::string_view text) {
    double x = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return x;
}

// One triple's parts as the reader found them: subject IRI, predicate, object (an IRI or a
// literal's lexical form).
struct TripleParts {
    std::string_view s;
    std::string_view p;
    std::string_view o;
    bool o_is_iri = false;
};

// The step `iri` names, or nullptr (a run has a handful of steps: a scan beats hashing the IRI).
template <typename Run>
auto find_step(Run& run, std::string_view iri) -> decltype(&run.steps.front()) {
    for (auto& step : run.steps) {
        if (step.iri == iri) return &step;
    }
    return nullptr;
}

// A fact of the embeddings call a step made; false for another fact.
bool learn_embeddings(StepFacts& step, SpanFact fact, const TripleParts& t) {
    switch (fact) {
        case SpanFact::kEmbeddingModel:
            if (!t.o_is_iri) step.embedding_model = std::string(t.o);
            return true;
        case SpanFact::kEmbeddingInputs:
            if (!t.o_is_iri) step.embedding_inputs = integer_of(t.o);
            return true;
        case SpanFact::kEmbeddingDimensions:
            if (!t.o_is_iri) step.embedding_dimensions = integer_of(t.o);
            return true;
        case SpanFact::kEmbeddingStartedAt:
            if (!t.o_is_iri) step.embedding_started_ms = base::parse_xsd_datetime_ms(t.o);
            return true;
        case SpanFact::kEmbeddingDuration:
            if (!t.o_is_iri)
                step.embedding_duration_ms = std::max<std::int64_t>(0, integer_of(t.o).value_or(0));
            return true;
        default:
            return false;
    }
}

void learn_step(StepFacts& step, SpanFact fact, const TripleParts& t) {
    if (learn_embeddings(step, fact, t)) return;
    switch (fact) {
        case SpanFact::kType:
            if (t.o_is_iri && t.o.substr(0, v::kGbNs.size()) == v::kGbNs) {
                const std::string_view local = t.o.substr(v::kGbNs.size());
                if (t.o == v::kToolUse) {
                    step.tool_use = true;
                } else if (step.type.empty()) {
                    step.type = std::string(local);
                }
            }
            return;
        case SpanFact::kGeneratedAt:
            if (!t.o_is_iri) step.generated_ms = base::parse_xsd_datetime_ms(t.o);
            return;
        case SpanFact::kDuration:
            if (!t.o_is_iri)
                step.duration_ms = std::max<std::int64_t>(0, integer_of(t.o).value_or(0));
            return;
        case SpanFact::kInputTokens:
            if (!t.o_is_iri) step.input_tokens = integer_of(t.o);
            return;
        case SpanFact::kOutputTokens:
            if (!t.o_is_iri) step.output_tokens = integer_of(t.o);
            return;
        case SpanFact::kModel:
            if (!t.o_is_iri) step.model = std::string(t.o);
            return;
        case SpanFact::kAction:
            if (!t.o_is_iri && step.tool.empty()) step.tool = std::string(t.o);
            return;
        case SpanFact::kToolStatus:
            if (!t.o_is_iri) step.tool_status = std::string(t.o);
            return;
        case SpanFact::kDerivedFrom:
            if (t.o_is_iri) step.derived.emplace_back(t.o);
            return;
        case SpanFact::kRetrieved:
            if (t.o_is_iri) step.retrieved.add(t.o);
            return;
        default:
            return;
    }
}

void learn(RunFacts& run, SpanFact fact, const TripleParts& t) {
    if (fact == SpanFact::kScore) {
        if (!t.o_is_iri) {
            if (const auto score = double_of(t.o)) run.scores.emplace(std::string(t.s), *score);
        }
        return;
    }
    if (fact == SpanFact::kUsed) {
        if (t.o_is_iri && t.s == run.row.uri && run.calling_step.empty())
            run.calling_step = std::string(t.o);
        return;
    }
    if (StepFacts* step = find_step(run, t.s)) learn_step(*step, fact, t);
}

// A stored triple, whatever its predicate.
void learn(RunFacts& run, const TripleParts& t) {
    SpanFact fact{};
    if (detail::span_fact_of(t.p, fact)) learn(run, fact, t);
}

// A record the scan does not take (not canonical: none the store writes today), through the DOM.
void learn_decoded(RunFacts& run, std::string_view record) {
    auto value = schema::parse_untrusted_json(record);
    if (!value) return;
    auto triple = schema::decode_triple(*value);
    if (!triple || !triple->s.is_iri() || !triple->p.is_iri()) return;
    TripleParts t{triple->s.as_iri().value, triple->p.as_iri().value, {}, false};
    if (triple->o.is_iri()) {
        t.o = triple->o.as_iri().value;
        t.o_is_iri = true;
    } else if (triple->o.is_literal()) {
        t.o = triple->o.as_literal().value;
    } else {
        return;
    }
    learn(run, t);
}

// Stored triples' JSON texts are searched for their keys by hand: whatever the key order and
// whitespace, a quote in the text is a string's delimiter or escaped (`\"`), so `"p"` followed by
// a colon is the key "p" and never a string's content.
bool json_ws(char c) noexcept { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::size_t skip_ws(std::string_view text, std::size_t i) noexcept {
    while (i < text.size() && json_ws(text[i])) ++i;
    return i;
}

// Where the values of the one-letter keys "p" and "s" of a triple's JSON object start, and
// whether it holds a quoted triple ("tr": its terms have the same keys).
struct TripleKeys {
    std::size_t p = std::string_view::npos;
    std::size_t s = std::string_view::npos;
    bool quoted = false;
};

TripleKeys triple_keys(std::string_view text) noexcept {
    TripleKeys keys;
    for (std::size_t i = 0; i + 2 < text.size(); ++i) {
        if (text[i] != '"') continue;
        const char c = text[i + 1];
        if (c == 't' && text[i + 2] == 'r' && i + 3 < text.size() && text[i + 3] == '"') {
            keys.quoted = true;
        } else if ((c == 'p' || c == 's') && text[i + 2] == '"') {
            const std::size_t colon = skip_ws(text, i + 3);
            if (colon < text.size() && text[colon] == ':') {
                std::size_t& at = c == 'p' ? keys.p : keys.s;
                if (at == std::string_view::npos) at = skip_ws(text, colon + 1);
            }
        }
    }
    return keys;
}

// The IRI of the term whose JSON object starts at `open` ({"t":"i","i":IRI} in any order), as
// spelled between its quotes; nullopt when it is not told so plainly (not an IRI term, or an
// escape in it): the triple is then read in full.
std::optional<std::string_view> term_iri(std::string_view text, std::size_t open) {
    if (open >= text.size() || text[open] != '{') return std::nullopt;
    for (std::size_t i = open + 1; i + 2 < text.size() && text[i] != '}'; ++i) {
        if (text[i] != '"' || text[i + 1] != 'i' || text[i + 2] != '"') continue;
        const std::size_t colon = skip_ws(text, i + 3);
        if (colon >= text.size() || text[colon] != ':') continue;
        const std::size_t quote = skip_ws(text, colon + 1);
        if (quote >= text.size() || text[quote] != '"') return std::nullopt;
        const std::size_t end = text.find('"', quote + 1);
        if (end == std::string_view::npos) return std::nullopt;
        const std::string_view iri = text.substr(quote + 1, end - quote - 1);
        if (iri.find('\\') != std::string_view::npos) return std::nullopt;
        return iri;
    }
    return std::nullopt;
}

// The IRI term {"i":IRI,"t":"i"} ending just before text[end], in the layout of nlohmann's dump()
// (the workers' encode_text writes the same bytes): its IRI and where the term starts; nullopt for
// any other layout, or an IRI with an escape.
std::optional<std::string_view> dumped_iri_before(std::string_view text, std::size_t end,
                                                  std::size_t& start) {
    constexpr std::string_view kHead = "{\"i\":\"";
    constexpr std::string_view kTail = "\",\"t\":\"i\"}";
    if (end > text.size() || end < kHead.size() + kTail.size() ||
        text.substr(end - kTail.size(), kTail.size()) != kTail)
        return std::nullopt;
    const std::size_t iri_end = end - kTail.size();
    // Back to the IRI's opening quote (an IRI holds no quote; a backslash is an escape).
    std::size_t open = iri_end;
    while (open > 0 && text[open - 1] != '"') {
        if (text[open - 1] == '\\') return std::nullopt;
        --open;
    }
    if (open < kHead.size() || text.substr(open - kHead.size(), kHead.size()) != kHead)
        return std::nullopt;
    const std::size_t head = open - kHead.size();
    const std::string_view iri = text.substr(open, iri_end - open);
    start = head;
    return iri;
}

// The predicate and subject IRIs of a triple stored in dump()'s layout, read from its end
// ({..."p":{"i":P,"t":"i"},"s":{"i":S,"t":"i"}}: keys sorted, so "p" and "s" close it, whatever
// the object is): the common case, without looking at the rest of the text.
bool dumped_keys(std::string_view text, std::string_view& p, std::string_view& s) {
    constexpr std::string_view kS = ",\"s\":";
    constexpr std::string_view kP = "\"p\":";
    std::size_t s_start = 0;
    std::size_t p_start = 0;
    if (text.empty() || text.back() != '}') return false;
    const auto subject = dumped_iri_before(text, text.size() - 1, s_start);
    if (!subject || s_start < kS.size() || text.substr(s_start - kS.size(), kS.size()) != kS)
        return false;
    const auto predicate = dumped_iri_before(text, s_start - kS.size(), p_start);
    if (!predicate || p_start < kP.size() || text.substr(p_start - kP.size(), kP.size()) != kP)
        return false;
    p = *predicate;
    s = *subject;
    return true;
}

// False for a stored triple the spans surely do not read (its predicate is none they use, or it
// describes no step), told from its text; the others are read by the explain scan. Most of a
// run's triples (the reified edges and chunks) are skipped so.
bool wanted(const RunFacts& run, std::string_view text) {
    std::optional<std::string_view> p;
    std::optional<std::string_view> s;
    std::string_view dumped_p;
    std::string_view dumped_s;
    if (dumped_keys(text, dumped_p, dumped_s)) {
        p = dumped_p;
        s = dumped_s;
    } else {
        const TripleKeys keys = triple_keys(text);
        if (keys.quoted) return true;
        p = term_iri(text, keys.p);
        if (p) s = term_iri(text, keys.s);
    }
    if (!p) return true;
    SpanFact fact{};
    if (!detail::span_fact_of(*p, fact)) return false;
    if (fact == SpanFact::kScore || fact == SpanFact::kUsed) return true;
    return !s || find_step(run, *s) != nullptr;
}

// Reads what the stored triples of run `run` say of its steps (stored long texts are not read
// back: no fact the spans use is one).
Result<void> read_triples(Connection& db, TripleBlobReader& reader, RunFacts& run) {
    ScannedTriple scanned;
    std::string scratch[3];
    return detail::each_stored_record(
        db, reader, run.row.id, [&](std::int64_t, const StoredTriple& record) -> Result<bool> {
            if (!wanted(run, record.triple)) return true;
            if (!scan_triple_text(record.triple, scanned)) {
                learn_decoded(run, record.triple);
                return true;
            }
            if (scanned.s.kind != ScannedKind::kIri || scanned.p.kind != ScannedKind::kIri)
                return true;
            if (scanned.o.kind != ScannedKind::kIri && scanned.o.kind != ScannedKind::kLiteral)
                return true;
            learn(run, TripleParts{
                           scanned.s.value.value(scratch[0]), scanned.p.value.value(scratch[1]),
                           scanned.o.value.value(scratch[2]), scanned.o.kind == ScannedKind::kIri});
            return true;
        });
}

// A blob reader made when a run's triples are read (a zstd context: not for runs whose events
// have their span facts).
class LazyReader {
public:
    TripleBlobReader& get() {
        if (!reader_) reader_.emplace();
        return *reader_;
    }

private:
    std::optional<TripleBlobReader> reader_;
};

// One event's step and span facts (events.span; nullopt: stored without them).
struct EventFacts {
    std::string explain_id;
    std::optional<std::string> span;
};

// What the span facts of `events` say of the run's steps; false when one is unreadable.
bool replay_span_facts(const std::vector<EventFacts>& events, RunFacts& run) {
    for (const auto& event : events) {
        const bool read = detail::each_span_fact(
            *event.span, run.row.uri, event.explain_id,
            [&](const detail::SpanFactTriple& t) {
                learn(run, t.fact, TripleParts{t.s, {}, t.o, t.o_is_iri});
            },
            [&](const detail::RetrievedRange& r) {
                // As learn() of each item: a step's retrieved IRIs, in order.
                if (StepFacts* step = find_step(run, r.s)) {
                    step->retrieved.add_range(r.stem, r.first, r.last);
                }
            });
        if (!read) return false;
    }
    return true;
}

// Reads run `row`'s events and what they say of its steps: from the events' span facts when
// every event has them (span_facts.hpp), else from the run's triples.
Result<void> read_run(Connection& db, LazyReader& reader, RunFacts& run) {
    std::vector<EventFacts> events;
    bool complete = true;
    {
        auto q = db.prepare("SELECT explain_id, span FROM events WHERE session = ?1 ORDER BY seq");
        if (!q) return q.error();
        q->bind(1, run.row.id);
        auto read = q->each([&](const Row& row) {
            EventFacts event;
            event.explain_id = row.is_null(0) ? std::string() : std::string(row.text(0));
            if (!row.is_null(1)) event.span = std::string(row.text(1));
            complete = complete && event.span.has_value();
            const std::string& iri = event.explain_id;
            if (!iri.empty() && iri != run.row.uri && find_step(run, iri) == nullptr) {
                StepFacts step;
                step.iri = iri;
                run.steps.push_back(std::move(step));
            }
            events.push_back(std::move(event));
        });
        if (!read) return read.error();
    }
    if (complete && replay_span_facts(events, run)) return {};
    // Unreadable facts: whatever they taught is forgotten before the triples are read.
    for (auto& step : run.steps) {
        StepFacts fresh;
        fresh.iri = std::move(step.iri);
        step = std::move(fresh);
    }
    run.calling_step.clear();
    run.scores.clear();
    return read_triples(db, reader.get(), run);
}

constexpr const char* kRunColumns =
    "id, uri, kind, parent, started, ended, last_event_at, status, error, collection, "
    "conversation";

RunRow run_row(const Row& row) {
    RunRow r;
    r.id = row.int64(0);
    r.uri = std::string(row.text(1));
    r.kind = std::string(row.text(2));
    r.parent = std::string(row.text(3));
    if (!row.is_null(4)) r.started = row.int64(4);
    if (!row.is_null(5)) r.ended = row.int64(5);
    r.last_event_at = row.int64(6);
    r.status = std::string(row.text(7));
    r.error = std::string(row.text(8));
    r.collection = std::string(row.text(9));
    r.conversation = std::string(row.text(10));
    return r;
}

Result<std::optional<RunRow>> read_row(Connection& db, std::string_view uri) {
    auto q = db.prepare(std::string("SELECT ") + kRunColumns + " FROM sessions WHERE uri = ?1");
    if (!q) return q.error();
    q->bind(1, uri);
    return q->first([](const Row& row) { return run_row(row); });
}

Result<std::vector<RunRow>> read_children(Connection& db, std::string_view uri) {
    auto q = db.prepare(std::string("SELECT ") + kRunColumns +
                        " FROM sessions WHERE parent = ?1 ORDER BY started, id");
    if (!q) return q.error();
    q->bind(1, uri);
    return q->collect([](const Row& row) { return run_row(row); });
}

std::uint64_t nanos(std::int64_t ms) {
    if (ms <= 0) return 0;
    constexpr std::int64_t kMaxMs = std::numeric_limits<std::int64_t>::max() / 1'000'000;
    return static_cast<std::uint64_t>(std::min(ms, kMaxMs)) * 1'000'000u;
}

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

// What every span of one run shares.
struct SpanContext {
    std::string trace_id;
    std::string trace_iri;  // the top-level run's session URI
    const RunFacts* run = nullptr;
    std::string run_span_id;
};

void add(Span& span, std::string_view key, otel::AttributeValue value) {
    span.attributes.push_back(Attribute{std::string(key), std::move(value)});
}

Span base_span(const SpanContext& c, std::string_view iri, std::string_view type) {
    Span span;
    span.trace_id = c.trace_id;
    span.span_id = schema::otel::span_id_of(iri);
    span.parent_span_id = c.run_span_id;
    span.kind = SpanKind::kInternal;
    add(span, otel::kStepIri, std::string(iri));
    add(span, otel::kStepType, std::string(type));
    add(span, otel::kTraceIri, c.trace_iri);
    return span;
}

// gen_ai.request.model, gen_ai.response.model and, for a built-in model, the provider.
void add_model_name(Span& span, const std::string& model) {
    if (model.empty()) return;
    add(span, "gen_ai.request.model", model);
    add(span, "gen_ai.response.model", model);
    // The built-in providers' models are named glassbox-*; the trace does not record which
    // provider served any other model.
    if (model.rfind("glassbox-", 0) == 0) add(span, "gen_ai.provider.name", "glassbox");
}

// The model attributes of a step that names its model (gen_ai.* of the inference span).
void add_model(Span& span, const StepFacts& step) {
    add_model_name(span, step.model);
    if (step.input_tokens) add(span, "gen_ai.usage.input_tokens", *step.input_tokens);
    if (step.output_tokens) add(span, "gen_ai.usage.output_tokens", *step.output_tokens);
}

// gen_ai.retrieval.documents: [{"id": ..., "score": ...}] as JSON text (the convention allows a
// JSON string where an attribute cannot be structured, and not every receiver takes an array
// of maps). A score only where the item has one: a traversal's edges have none.
std::string documents_json(const RetrievedItems& items,
                           const std::unordered_map<std::string, double>& scores) {
    std::string out;
    out.reserve(items.size() * 80 + 2);
    out += '[';
    std::string stem;  // a piece's stem as JSON, without its closing quote
    std::string id;    // an item's IRI, to look its score up
    char digits[24];
    for (const auto& piece : items.pieces()) {
        stem.clear();
        schema::append_json_string(stem, piece.stem);
        stem.pop_back();  // a numbered item's digits go inside the string
        for (std::uint64_t n = piece.first, i = 0; i < piece.size(); ++n, ++i) {
            std::string_view number;
            if (piece.numbered) {
                const char* end = std::to_chars(std::begin(digits), std::end(digits), n).ptr;
                number = std::string_view(digits, static_cast<std::size_t>(end - digits));
            }
            if (out.size() > 1) out += ',';
            out.append("{\"id\":").append(stem).append(number).append("\"");
            if (!scores.empty()) {
                id.assign(piece.stem).append(number);
                if (const auto score = scores.find(id); score != scores.end()) {
                    out += ",\"score\":";
                    schema::append_json_number(out, score->second);
                }
            }
            out += '}';
        }
    }
    out += ']';
    return out;
}

// The retrieval attributes of `step`. The retrieved ids and their scores are sent once, in the
// convention's gen_ai.retrieval.documents; glassbox.retrieval.count says how many there are
// (a receiver that truncates long attributes keeps it).
void make_retrieval(Span& span, const SpanContext& c, const StepFacts& step) {
    const std::string& collection = c.run->row.collection;
    span.name = collection.empty() ? "retrieval" : "retrieval " + collection;
    add(span, otel::kOperationName, "retrieval");
    if (!collection.empty()) add(span, "gen_ai.data_source.id", collection);
    add(span, "glassbox.retrieval.count", static_cast<std::int64_t>(step.retrieved.size()));
    add(span, "gen_ai.retrieval.documents", documents_json(step.retrieved, c.run->scores));
    add_model(span, step);
}

Span step_span(const SpanContext& c, const StepFacts& step) {
    Span span = base_span(c, step.iri, step.type);
    const std::int64_t end = step.generated_ms.value_or(c.run->row.ended.value_or(0));
    span.end_ns = nanos(end);
    span.start_ns = nanos(end - step.duration_ms);
    const bool model_call = !step.model.empty() && (step.input_tokens || step.output_tokens);
    if (step.type == "Exploration") {
        make_retrieval(span, c, step);
    } else if (model_call) {
        span.name = "chat " + step.model;
        span.kind = SpanKind::kClient;
        add(span, otel::kOperationName, "chat");
        add_model(span, step);
    } else {
        span.name = step.type.empty() ? "step" : lower(step.type);
        add_model(span, step);
    }
    return span;
}

// The embeddings call `step` made, under the step's span (a CLIENT call of the embeddings
// service, as the GenAI conventions' `embeddings` operation).
Span embeddings_span(const SpanContext& c, const StepFacts& step, const std::string& step_span) {
    Span span = base_span(c, step.iri, "EmbeddingsCall");
    span.span_id = schema::otel::span_id_of(step.iri + std::string(kEmbeddingsSpanSuffix));
    span.parent_span_id = step_span;
    span.kind = SpanKind::kClient;
    const std::string& model = step.embedding_model;
    span.name = model.empty() ? "embeddings" : "embeddings " + model;
    const std::int64_t start = step.embedding_started_ms.value_or(0);
    span.start_ns = nanos(start);
    // The duration is >= 0 (learn_embeddings); a stored one too long for the clock saturates.
    const std::int64_t duration = step.embedding_duration_ms;
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    span.end_ns = nanos(start > kMax - duration ? kMax : start + duration);
    add(span, otel::kOperationName, "embeddings");
    add_model_name(span, model);
    if (step.embedding_dimensions)
        add(span, "gen_ai.embeddings.dimension.count", *step.embedding_dimensions);
    if (step.embedding_inputs) add(span, "glassbox.embeddings.inputs", *step.embedding_inputs);
    return span;
}

// The Observation that recorded what `analysis` called: the one derived from it, else the first
// Observation after it.
const StepFacts* observation_of(const RunFacts& run, std::size_t analysis) {
    const std::string& iri = run.steps[analysis].iri;
    const StepFacts* next = nullptr;
    for (std::size_t i = analysis + 1; i < run.steps.size(); ++i) {
        const StepFacts& s = run.steps[i];
        if (s.type != "Observation") continue;
        if (std::find(s.derived.begin(), s.derived.end(), iri) != s.derived.end()) return &s;
        if (next == nullptr) next = &s;
    }
    return next;
}

Span tool_span(const SpanContext& c, std::size_t analysis) {
    const StepFacts& step = c.run->steps[analysis];
    Span span = base_span(c, step.iri, "ToolUse");
    span.span_id = schema::otel::span_id_of(step.iri + std::string(kToolSpanSuffix));
    span.name = "execute_tool " + step.tool;
    add(span, otel::kOperationName, "execute_tool");
    add(span, "gen_ai.tool.name", step.tool);
    add(span, "gen_ai.tool.call.id", step.iri);
    const std::int64_t start = step.generated_ms.value_or(c.run->row.started.value_or(0));
    span.start_ns = nanos(start);
    span.end_ns = span.start_ns;
    if (const StepFacts* observation = observation_of(*c.run, analysis)) {
        span.end_ns = std::max(span.start_ns, nanos(observation->generated_ms.value_or(start)));
        if (observation->tool_status == "error") {
            span.status = otel::StatusCode::kError;
            span.status_message = "the tool " + step.tool + " failed";
        }
    }
    return span;
}

Span run_span(const SpanContext& c, const std::string& parent_span_id) {
    const RunRow& row = c.run->row;
    Span span;
    span.trace_id = c.trace_id;
    span.span_id = c.run_span_id;
    span.parent_span_id = parent_span_id;
    span.kind = parent_span_id.empty() ? SpanKind::kServer : SpanKind::kInternal;
    span.name = row.kind.empty() ? "invoke_agent" : "invoke_agent " + row.kind;
    const std::int64_t start = row.started.value_or(row.last_event_at);
    span.start_ns = nanos(start);
    span.end_ns = nanos(std::max(start, row.ended.value_or(row.last_event_at)));
    add(span, otel::kOperationName, "invoke_agent");
    if (!row.kind.empty()) add(span, "gen_ai.agent.name", row.kind);
    if (!row.conversation.empty()) add(span, "gen_ai.conversation.id", row.conversation);
    add(span, otel::kTraceIri, c.trace_iri);
    add(span, otel::kRunIri, row.uri);
    add(span, otel::kStepIri, row.uri);
    add(span, "glassbox.run.status", row.status);
    if (!row.collection.empty()) add(span, "glassbox.collection", row.collection);
    if (row.status == "error") {
        span.status = otel::StatusCode::kError;
        span.status_message = row.error.empty() ? "the run ended in error" : row.error;
    }
    return span;
}

// The spans of one run read; `owners` gains, for each of its steps, the span a sub-run it calls
// nests under (a tool call's span for a ToolUse analysis, else the step's own).
void run_spans(const SpanContext& c, const std::string& parent_span_id, std::vector<Span>& out,
               std::unordered_map<std::string, std::string>& owners) {
    out.push_back(run_span(c, parent_span_id));
    for (std::size_t i = 0; i < c.run->steps.size(); ++i) {
        const StepFacts& step = c.run->steps[i];
        out.push_back(step_span(c, step));
        owners[step.iri] = out.back().span_id;
        if (step.embedding_started_ms) out.push_back(embeddings_span(c, step, owners[step.iri]));
        if (step.tool_use && !step.tool.empty()) {
            out.push_back(tool_span(c, i));
            owners[step.iri] = out.back().span_id;
        }
    }
}

// A trace id for a top-level run whose URI RunUris did not build (a third-party worker's): two
// span ids of it, so it is still the same in every export.
std::string trace_id_for(const std::string& top_uri) {
    if (auto id = schema::otel::trace_id_of(top_uri)) return std::move(*id);
    return schema::otel::span_id_of(top_uri) + schema::otel::span_id_of(top_uri + "#trace");
}

struct SpanWalk {
    Connection& db;
    LazyReader& reader;
    std::string trace_id;
    std::string trace_iri;
    std::set<std::int64_t> seen;
    std::unordered_map<std::string, std::string> owners;
    std::vector<Span> spans;
};

// The span a sub-run nests under: the span owning the calling step its Question prov:used (a
// tool call's, or the step's), else its caller's run span.
std::string parent_span_of(const SpanWalk& w, const RunFacts& run) {
    if (!run.calling_step.empty()) {
        const auto owner = w.owners.find(run.calling_step);
        return owner != w.owners.end() ? owner->second : schema::otel::span_id_of(run.calling_step);
    }
    return schema::otel::span_id_of(run.row.parent);
}

// Adds the spans of `row` and of its sub-runs, depth first; `top`: a top-level run (no parent).
Result<void> walk(SpanWalk& w, RunRow row, bool top, int depth) {
    w.seen.insert(row.id);
    RunFacts run;
    run.row = std::move(row);
    if (auto read = read_run(w.db, w.reader, run); !read) return read;
    const SpanContext c{w.trace_id, w.trace_iri, &run, schema::otel::span_id_of(run.row.uri)};
    run_spans(c, top ? std::string() : parent_span_of(w, run), w.spans, w.owners);
    if (depth >= kMaxRunDepth) return {};
    auto children = read_children(w.db, run.row.uri);
    if (!children) return children.error();
    for (auto& child : *children) {
        if (w.seen.count(child.id) != 0) continue;
        if (auto nested = walk(w, std::move(child), false, depth + 1); !nested) return nested;
    }
    return {};
}

// The session URI at the top of `row`'s parent chain.
Result<std::string> top_of(Connection& db, const RunRow& row) {
    std::string uri = row.uri;
    std::string parent = row.parent;
    for (int depth = 0; !parent.empty() && depth < kMaxRunDepth; ++depth) {
        auto up = read_row(db, parent);
        if (!up) return up.error();
        if (!*up) break;  // the caller is not stored (pruned, or never delivered)
        uri = (*up)->uri;
        parent = (*up)->parent;
    }
    return uri;
}

// The spans of run `uri` and its sub-runs (a read transaction is open); nullopt when it is not
// stored.
Result<std::optional<std::vector<Span>>> spans_of(Connection& db, LazyReader& reader,
                                                  const std::string& uri) {
    auto row = read_row(db, uri);
    if (!row) return row.error();
    if (!*row) return std::optional<std::vector<Span>>{};
    auto top = top_of(db, **row);
    if (!top) return top.error();
    SpanWalk w{db, reader, trace_id_for(*top), *top, {}, {}, {}};
    const bool top_level = (*row)->parent.empty();
    if (auto walked = walk(w, std::move(**row), top_level, 0); !walked) return walked.error();
    return std::optional<std::vector<Span>>{std::move(w.spans)};
}

}  // namespace

Result<std::vector<Span>> TraceStore::otel_spans(std::string_view session) {
    auto transaction = storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kRead);
    if (!transaction) return transaction.error();
    auto uri = resolve_session(session);
    if (!uri) return uri.error();
    LazyReader reader;
    auto spans = spans_of(*db_, reader, *uri);
    if (!spans) return spans.error();
    if (!*spans) return make_error(ErrorType::kNotFound, "no trace " + std::string(session));
    (void)transaction->commit();
    return std::move(**spans);
}

Result<std::vector<Span>> TraceStore::otel_spans(const std::vector<std::string>& sessions) {
    auto transaction = storage::sql::Transaction::begin(*db_, storage::sql::TransactionKind::kRead);
    if (!transaction) return transaction.error();
    LazyReader reader;
    std::vector<Span> out;
    for (const std::string& session : sessions) {
        auto spans = spans_of(*db_, reader, session);
        if (!spans) return spans.error();
        if (!*spans) continue;
        out.insert(out.end(), std::make_move_iterator((*spans)->begin()),
                   std::make_move_iterator((*spans)->end()));
    }
    (void)transaction->commit();
    return out;
}

}  // namespace glassbox::trace
