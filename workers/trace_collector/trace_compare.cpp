// The `compare` op: two stored runs read from their triples, and what changed between them.
#include "workers/trace_collector/trace_compare.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "schema/vocabulary.hpp"

namespace glassbox::trace {
namespace {

namespace v = schema::vocab;
using base::ErrorType;
using base::make_error;
using base::Result;
using nlohmann::json;
using schema::ComparedRun;
using schema::Term;
using schema::TraceDetail;
using schema::Triple;

// Quoted triples are reified as <selection>:s|p|o statements (explain_builder.cpp): read back at
// most this deep.
constexpr int kMaxQuotedDepth = 4;

std::string key_of(const Term& term) {
    if (term.is_iri()) return term.as_iri().value;
    if (term.is_blank()) return "_:" + term.as_blank().id;
    return {};
}

// The triples of a trace and of its sub-runs, by subject.
class TraceIndex {
public:
    explicit TraceIndex(const TraceDetail& trace) { add(trace, 0); }

    std::vector<const Term*> values(const std::string& subject, std::string_view predicate) const {
        std::vector<const Term*> out;
        const auto it = by_subject_.find(subject);
        if (it == by_subject_.end()) return out;
        for (const Triple* t : it->second)
            if (t->p.is_iri() && t->p.as_iri().value == predicate) out.push_back(&t->o);
        return out;
    }
    const Term* value(const std::string& subject, std::string_view predicate) const {
        const auto all = values(subject, predicate);
        return all.empty() ? nullptr : all.front();
    }
    // The first literal's text, or the first IRI's value.
    std::optional<std::string> text(const std::string& subject, std::string_view predicate) const {
        for (const Term* o : values(subject, predicate)) {
            if (o->is_literal()) return o->as_literal().value;
            if (o->is_iri()) return o->as_iri().value;
        }
        return std::nullopt;
    }
    bool has_type(const std::string& subject, std::string_view type) const {
        for (const Term* o : values(subject, v::kRdfType))
            if (o->is_iri() && o->as_iri().value == type) return true;
        return false;
    }
    // A text stored inline under gb:answerText, else the literal its gb:answerRef node carries.
    std::string answer_text(const std::string& step) const {
        if (auto inline_text = text(step, v::kAnswerText)) return *inline_text;
        const Term* ref = value(step, v::kAnswerRef);
        if (ref == nullptr) return {};
        const auto it = by_subject_.find(key_of(*ref));
        if (it == by_subject_.end()) return {};
        for (const Triple* t : it->second)
            if (t->o.is_literal()) return t->o.as_literal().value;
        return {};
    }

private:
    void add(const TraceDetail& trace, int depth) {
        for (const auto& event : trace.events)
            for (const auto& triple : event.triples)
                by_subject_[key_of(triple.s)].push_back(&triple);
        if (depth >= schema::kMaxTraceDepth) return;
        for (const auto& sub : trace.subtraces) add(sub, depth + 1);
    }

    std::unordered_map<std::string, std::vector<const Triple*>> by_subject_;
};

// The subjects a run's own events type as `type`, in event order.
std::vector<std::string> steps_of(const TraceDetail& run, std::string_view type) {
    std::vector<std::string> out;
    for (const auto& event : run.events) {
        for (const auto& t : event.triples) {
            if (t.p.is_iri() && t.p.as_iri().value == v::kRdfType && t.o.is_iri() &&
                t.o.as_iri().value == type) {
                auto key = key_of(t.s);
                if (std::find(out.begin(), out.end(), key) == out.end())
                    out.push_back(std::move(key));
            }
        }
    }
    return out;
}

// Every run of the tree, the trace first (depth-first, bounded as the decoder bounds it).
void each_run(const TraceDetail& trace, const std::function<void(const TraceDetail&)>& visit,
              int depth = 0) {
    visit(trace);
    if (depth >= schema::kMaxTraceDepth) return;
    for (const auto& sub : trace.subtraces) each_run(sub, visit, depth + 1);
}

// The fact a reified statement stands for; nullopt when a part is missing.
std::optional<Triple> statement(const TraceIndex& index, const std::string& uri, int depth = 0) {
    const auto part = [&](std::string_view predicate) -> std::optional<Term> {
        const Term* t = index.value(uri, predicate);
        if (t == nullptr) return std::nullopt;
        if (t->is_iri() && depth < kMaxQuotedDepth &&
            index.value(t->as_iri().value, v::kRdfSubject)) {
            auto inner = statement(index, t->as_iri().value, depth + 1);
            if (!inner) return std::nullopt;
            return Term(schema::QuotedTriple{std::make_shared<const Triple>(std::move(*inner))});
        }
        return *t;
    };
    auto s = part(v::kRdfSubject);
    auto p = part(v::kRdfPredicate);
    auto o = part(v::kRdfObject);
    if (!s || !p || !o) return std::nullopt;
    return schema::make_triple(std::move(*s), std::move(*p), std::move(*o));
}

// Where a selection (or an answer source) came from: its document when one is known, else its
// chunk or what it names. A re-ranked chunk names its retrieved chunk, which names the source.
std::string source_of(const TraceIndex& index, const std::string& uri, int depth = 0) {
    if (auto document = index.text(uri, v::kSourceDocument)) return *document;
    if (auto chunk = index.text(uri, v::kSourceChunk)) {
        if (auto document = index.text(*chunk, v::kProvWasDerivedFrom)) return *document;
        return *chunk;
    }
    if (index.has_type(uri, v::kChunk)) {
        if (auto document = index.text(uri, v::kProvWasDerivedFrom)) return *document;
        return uri;
    }
    const auto from = index.text(uri, v::kProvWasDerivedFrom);
    if (!from) return {};
    if (depth < 2 && (index.value(*from, v::kRdfType) != nullptr)) {
        auto deeper = source_of(index, *from, depth + 1);
        if (!deeper.empty()) return deeper;
    }
    return *from;
}

// Adds `value` once, keeping order, up to kMaxComparedItems.
template <typename T>
void add_once(std::vector<T>& out, std::unordered_set<std::string>& seen, std::string key,
              T value) {
    if (out.size() >= schema::kMaxComparedItems || !seen.insert(std::move(key)).second) return;
    out.push_back(std::move(value));
}

// The facts a run's Focus steps kept and the sources its selections derive from (every run of
// the tree): a run with re-ranked chunks used those, one without its retrieved chunks.
void read_selections(const TraceDetail& trace, const TraceIndex& index, ComparedRun& out) {
    std::unordered_set<std::string> facts_seen;
    std::unordered_set<std::string> sources_seen;
    const auto add_source = [&](const std::string& uri) {
        auto source = source_of(index, uri);
        if (!source.empty()) add_once(out.sources, sources_seen, source, std::string(source));
    };
    each_run(trace, [&](const TraceDetail& run) {
        bool ranked = false;
        for (const auto& focus : steps_of(run, v::kFocus)) {
            for (const Term* sel : index.values(focus, v::kSelectedEdge)) {
                const auto uri = key_of(*sel);
                if (auto fact = statement(index, uri)) {
                    auto key = schema::to_ntriples(*fact);
                    add_once(out.facts, facts_seen, std::move(key), std::move(*fact));
                }
                add_source(uri);
            }
            for (const Term* sel : index.values(focus, v::kSelectedChunk)) {
                ranked = true;
                add_source(key_of(*sel));
            }
        }
        if (!ranked) {
            for (const auto& exploration : steps_of(run, v::kExploration))
                for (const Term* sel : index.values(exploration, v::kRetrievedChunk))
                    add_source(key_of(*sel));
        }
        // A routed answer's sources name a document, a file or a chunk (of its chunk's document).
        for (const auto& step : steps_of(run, v::kConclusion)) {
            for (const Term* node : index.values(step, v::kAnswerSourceProperty)) {
                auto from = index.text(key_of(*node), v::kProvWasDerivedFrom);
                if (!from) continue;
                if (index.has_type(*from, v::kChunk)) from = source_of(index, *from);
                if (!from->empty()) add_once(out.sources, sources_seen, *from, *from);
            }
        }
    });
    std::sort(out.sources.begin(), out.sources.end());
}

std::optional<double> number(const std::optional<std::string>& text) {
    if (!text) return std::nullopt;
    double value = 0.0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec != std::errc() || end != text->data() + text->size() || !std::isfinite(value))
        return std::nullopt;
    return value;
}

// The top-level run's answer: its last Synthesis or Conclusion that states one.
void read_answer(const TraceDetail& trace, const TraceIndex& index, ComparedRun& out) {
    std::string step;
    std::size_t last_seq = 0;
    for (const auto type : {v::kSynthesis, v::kConclusion}) {
        for (const auto& uri : steps_of(trace, type)) {
            if (index.answer_text(uri).empty()) continue;
            std::size_t seq = 0;
            for (const auto& event : trace.events)
                if (event.explain_id == uri) seq = static_cast<std::size_t>(event.seq) + 1;
            if (step.empty() || seq >= last_seq) {
                step = uri;
                last_seq = seq;
            }
        }
    }
    if (step.empty()) return;
    out.answer = index.answer_text(step);
    out.short_answer = index.text(step, v::kShortAnswer);
    out.confidence = number(index.text(step, v::kAnswerConfidence));
    const auto abstained = index.text(step, v::kAbstained);
    out.abstained = abstained == "true" || abstained == "1";
}

std::vector<std::string> models_of(const TraceDetail& trace) {
    std::set<std::string> models;
    each_run(trace, [&](const TraceDetail& run) {
        for (const auto& event : run.events)
            for (const auto& t : event.triples)
                if (t.p.is_iri() && t.p.as_iri().value == v::kModelName && t.o.is_literal())
                    models.insert(t.o.as_literal().value);
    });
    return {models.begin(), models.end()};
}

// `what` (NotFound or an ambiguous prefix) with the op's side named.
base::Error named(const base::Error& error, std::string_view side) {
    return make_error(error.type, std::string(side) + ": " + error.message);
}

Result<TraceDetail> stored_trace(TraceStore& store, std::string_view id, std::string_view side) {
    auto shown = store.show(id);
    if (!shown) return named(shown.error(), side);
    auto decoded = schema::decode<TraceDetail>(*shown);
    if (!decoded) {
        return make_error(
            ErrorType::kInternal,
            std::string(side) + ": the stored trace does not decode: " + decoded.error().message);
    }
    return decoded;
}

}  // namespace

ComparedRun compared_run(const TraceDetail& trace) {
    const TraceIndex index(trace);
    const auto& s = trace.session;
    ComparedRun out;
    out.session = s.session;
    out.kind = s.kind;
    out.question = index.text(s.session, v::kQuery).value_or(s.question.value_or(""));
    out.collection = s.collection;
    out.status = s.status;
    out.started = s.started;
    out.duration_ms = s.duration_ms;
    out.input_tokens = s.input_tokens;
    out.output_tokens = s.output_tokens;
    out.revision_of = index.text(s.session, v::kProvWasRevisionOf);
    read_answer(trace, index, out);
    out.models = models_of(trace);
    read_selections(trace, index, out);
    return out;
}

schema::TraceComparison compare_runs(ComparedRun a, ComparedRun b) {
    schema::TraceComparison out;
    out.answer_changed = a.answer != b.answer;
    out.short_answer_changed = a.short_answer.value_or("") != b.short_answer.value_or("");
    if (a.confidence && b.confidence) out.confidence_change = *b.confidence - *a.confidence;
    const std::set<std::string> sources_a(a.sources.begin(), a.sources.end());
    const std::set<std::string> sources_b(b.sources.begin(), b.sources.end());
    for (const auto& s : b.sources)
        if (!sources_a.contains(s)) out.sources_added.push_back(s);
    for (const auto& s : a.sources) {
        if (!sources_b.contains(s))
            out.sources_removed.push_back(s);
        else
            ++out.sources_kept;
    }
    std::unordered_set<std::string> facts_a;
    std::unordered_set<std::string> facts_b;
    for (const auto& f : a.facts) facts_a.insert(schema::to_ntriples(f));
    for (const auto& f : b.facts) facts_b.insert(schema::to_ntriples(f));
    for (const auto& f : b.facts)
        if (!facts_a.contains(schema::to_ntriples(f))) out.facts_added.push_back(f);
    for (const auto& f : a.facts) {
        if (!facts_b.contains(schema::to_ntriples(f)))
            out.facts_removed.push_back(f);
        else
            ++out.facts_kept;
    }
    out.b_revises_a = b.revision_of && *b.revision_of == a.session;
    out.a = std::move(a);
    out.b = std::move(b);
    return out;
}

Result<json> compare_traces(TraceStore& store, std::string_view a, std::string_view b) {
    auto first = stored_trace(store, a, "a");
    if (!first) return first.error();
    auto second = stored_trace(store, b, "b");
    if (!second) return second.error();
    return schema::encode(compare_runs(compared_run(*first), compared_run(*second)));
}

}  // namespace glassbox::trace
