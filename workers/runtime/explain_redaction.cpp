// The redacting triple sink and the gb:Redaction record of a step.
#include "workers/runtime/explain_redaction.hpp"

#include <array>
#include <string>
#include <utility>

#include "schema/vocabulary.hpp"

namespace glassbox::runtime {
namespace {

namespace v = schema::vocab;
using text::RedactionScope;

constexpr std::array<std::pair<std::string_view, RedactionScope>, 21> kScopes{{
    {v::kQuery, RedactionScope::kQuestion},
    {v::kConcept, RedactionScope::kQuestion},
    {v::kThought, RedactionScope::kQuestion},
    {v::kArguments, RedactionScope::kQuestion},
    {v::kReasoning, RedactionScope::kQuestion},
    {v::kResolvedQuestion, RedactionScope::kQuestion},
    {v::kResolvedReference, RedactionScope::kQuestion},
    {v::kRephrasedQuestion, RedactionScope::kQuestion},
    {v::kAskedPart, RedactionScope::kQuestion},
    {v::kCoveredPart, RedactionScope::kQuestion},
    {v::kExcludes, RedactionScope::kQuestion},
    {v::kAnswerText, RedactionScope::kAnswer},
    {v::kShortAnswer, RedactionScope::kAnswer},
    {v::kReflectionReason, RedactionScope::kAnswer},
    {v::kObservationText, RedactionScope::kObservations},
    {v::kRdfSubject, RedactionScope::kDocuments},
    {v::kRdfObject, RedactionScope::kDocuments},
    {v::kRdfsLabel, RedactionScope::kDocuments},
    {v::kRdfsComment, RedactionScope::kDocuments},
    {v::kStatedValue, RedactionScope::kDocuments},
    {v::kRivalValue, RedactionScope::kDocuments},
}};

std::string node_uri(std::string_view step, std::size_t n) {
    return std::string(step) + ":redaction:" + std::to_string(n);
}

}  // namespace

RedactionScope redaction_scope_of(std::string_view predicate) noexcept {
    for (const auto& [p, scope] : kScopes)
        if (p == predicate) return scope;
    return RedactionScope::kOther;
}

bool is_text_datatype(std::string_view datatype) noexcept {
    return datatype.empty() || datatype == schema::kXsdString || datatype == schema::kRdfLangString;
}

void RedactingSink::iri(std::string_view s, std::string_view p, std::string_view o) {
    out_.iri(s, p, o);
    ++count_;
}

void RedactingSink::literal(std::string_view s, std::string_view p, std::string_view value,
                            std::string_view datatype) {
    ++count_;
    if (is_text_datatype(datatype)) {
        if (auto redacted = redactor_.redact(value, redaction_scope_of(p), tally_)) {
            out_.literal(s, p, *redacted, datatype);
            return;
        }
    }
    out_.literal(s, p, value, datatype);
}

void RedactingSink::term(std::string_view s, std::string_view p, const schema::Term& o) {
    ++count_;
    if (auto redacted = redact_object(redactor_, p, o, tally_)) {
        out_.term(s, p, *redacted);
        return;
    }
    out_.term(s, p, o);
}

std::optional<schema::Term> redact_object(const text::Redactor& redactor,
                                          std::string_view predicate, const schema::Term& o,
                                          text::RedactionTally& tally) {
    if (!o.is_literal() || !is_text_datatype(o.as_literal().datatype)) return std::nullopt;
    auto redacted = redactor.redact(o.as_literal().value, redaction_scope_of(predicate), tally);
    if (!redacted) return std::nullopt;
    schema::Literal literal = o.as_literal();
    literal.value = std::move(*redacted);
    return schema::Term(std::move(literal));
}

void record_redactions(schema::TripleSink& out, std::string_view step,
                       const text::RedactionTally& tally) {
    std::size_t n = 0;
    for (const auto& [key, count] : tally.counts()) {
        const auto node = node_uri(step, n++);
        out.iri(step, v::kRedactionProperty, node);
        out.iri(node, v::kRdfType, v::kRedaction);
        out.literal(node, v::kRedactionRule, key.first);
        out.literal(node, v::kRedactionScope, text::to_string(key.second));
        out.integer(node, v::kRedactionCount, count);
    }
}

std::vector<schema::Triple> redaction_triples(std::string_view step,
                                              const text::RedactionTally& tally,
                                              const std::optional<std::string>& graph) {
    schema::TripleList list(graph);
    record_redactions(list, step, tally);
    return list.take();
}

}  // namespace glassbox::runtime
