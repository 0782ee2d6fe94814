// Redaction of an explain message before it leaves the worker (docs/security.md, "Redaction"):
// each text literal is redacted in the scope its predicate gives it, and the step records which
// rule masked how much in which scope (gb:redaction), never the original.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/term.hpp"
#include "schema/triple_sink.hpp"
#include "text/redactor.hpp"

namespace glassbox::runtime {

// The scope of a literal of `predicate`: the question and what is derived from it (gb:query,
// concepts, thoughts, tool arguments, rephrasings), the answer (gb:answerText, gb:shortAnswer),
// observations (gb:observation), quoted document text (a quoted fact's rdf:subject/object, labels,
// conflicting values); kOther for any other.
text::RedactionScope redaction_scope_of(std::string_view predicate) noexcept;

// True for a literal datatype that holds free text (xsd:string, rdf:langString, none).
bool is_text_datatype(std::string_view datatype) noexcept;

// Forwards every triple to `out` with its text literals redacted, counting in `tally`.
class RedactingSink final : public schema::TripleSink {
public:
    RedactingSink(schema::TripleSink& out, const text::Redactor& redactor,
                  text::RedactionTally& tally)
        : out_(out), redactor_(redactor), tally_(tally) {}

    void iri(std::string_view s, std::string_view p, std::string_view o) override;
    void literal(std::string_view s, std::string_view p, std::string_view value,
                 std::string_view datatype = {}) override;
    void term(std::string_view s, std::string_view p, const schema::Term& o) override;

private:
    schema::TripleSink& out_;
    const text::Redactor& redactor_;
    text::RedactionTally& tally_;
};

// `o` with its text redacted when it is a text literal of `predicate`'s scope; nullopt when
// nothing changed.
std::optional<schema::Term> redact_object(const text::Redactor& redactor,
                                          std::string_view predicate, const schema::Term& o,
                                          text::RedactionTally& tally);

// Writes what `tally` counted as the step `step`'s record: for each rule and scope a node
// <step>:redaction:N a gb:Redaction, gb:redactionRule, gb:redactionScope, gb:redactionCount,
// linked by <step> gb:redaction.
void record_redactions(schema::TripleSink& out, std::string_view step,
                       const text::RedactionTally& tally);

// The same triples as a list, each in `graph`.
std::vector<schema::Triple> redaction_triples(std::string_view step,
                                              const text::RedactionTally& tally,
                                              const std::optional<std::string>& graph);

}  // namespace glassbox::runtime
