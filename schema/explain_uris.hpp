// URIs of every entity of an explain trace, all derived from one UUID per run.
//
// Patterns (<uuid> is a lowercase RFC 4122 UUID; N is the caller's 0-based position):
//   urn:glassbox:<uuid>:question              the run (a prov:Activity) = the session URI
//   urn:glassbox:<uuid>:grounding | :exploration | :focus | :synthesis | :conclusion
//   urn:glassbox:<uuid>:routing               routing decision
//   urn:glassbox:<uuid>:escalation:N
//   urn:glassbox:<uuid>:analysis:N            an agent iteration (gb:Analysis, + gb:ToolUse)
//   urn:glassbox:<uuid>:observation:N
//   urn:glassbox:<uuid>:focus:edge:N          a selected graph edge (rdf:Statement)
//   urn:glassbox:<uuid>:exploration:chunk:N   a retrieved chunk
//   urn:glassbox:<uuid>:exploration:edge:N    an explored graph edge (rdf:Statement)
//   urn:glassbox:<uuid>:focus:chunk:N         a re-ranked chunk
//   urn:glassbox:<uuid>:synthesis:citation:N
//   urn:glassbox:<uuid>:synthesis:feature:N   an evidence feature of the answer's confidence
//   urn:glassbox:<uuid>:conclusion:feature:N
//   urn:glassbox:<uuid>:text:<key>            a large text stored once in the trace store
//   urn:glassbox:<uuid>:removed:N             a fact a knowledge change removed (rdf:Statement)
//   urn:glassbox:agent:worker:<service>       a worker (prov:SoftwareAgent)
//   urn:glassbox:agent:model:<model>          a model (prov:SoftwareAgent), percent-encoded
//   urn:glassbox:agent:user:<name>            a person (prov:Agent), percent-encoded
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace glassbox::schema::explain {

class RunUris {
public:
    // A fresh run: a random version-4 UUID.
    static RunUris generate();
    // A run with a given UUID (tests, replays); nullopt unless it is 8-4-4-4-12 hex.
    static std::optional<RunUris> from_uuid(std::string_view uuid);
    // The run a URI built by some RunUris belongs to (e.g. a request's parent_uri).
    static std::optional<RunUris> from_uri(std::string_view uri);

    const std::string& uuid() const noexcept { return uuid_; }
    // True if `uri` was built by this run.
    bool owns(std::string_view uri) const noexcept;
    // True if `uri` is an edge or chunk selection of this run (what a citation may cite).
    bool is_selection(std::string_view uri) const noexcept;

    std::string question() const;  // the session URI
    std::string grounding() const;
    std::string exploration() const;
    std::string focus() const;
    std::string synthesis() const;
    std::string conclusion() const;
    std::string routing_decision() const;
    std::string escalation(std::size_t n) const;
    std::string analysis(std::size_t n) const;
    std::string observation(std::size_t n) const;
    std::string edge_selection(std::size_t n) const;
    std::string explored_edge(std::size_t n) const;
    std::string retrieved_chunk(std::size_t n) const;
    std::string ranked_chunk(std::size_t n) const;
    std::string citation(std::size_t n) const;
    // Evidence feature N of the confidence the step `step` (synthesis or conclusion) states.
    std::string evidence_feature(std::string_view step, std::size_t n) const;
    std::string completeness(std::string_view step) const;
    std::string conflict(std::string_view step, std::size_t n) const;
    std::string text(std::string_view key) const;
    // Fact N removed by a knowledge change (docs/knowledge.md, "Changing and retracting").
    std::string removed_fact(std::size_t n) const;

private:
    explicit RunUris(std::string uuid);
    std::string at(std::string_view suffix) const;

    std::string uuid_;
    std::string prefix_;  // "urn:glassbox:<uuid>:"
};

// Why `iri` cannot enter a trace, or nullopt when it can: an IRI must be absolute (a scheme
// such as "urn:" or "https:" first, RFC 3987) and hold none of the characters an N-Triples
// IRIREF forbids (<>"{}|^`\, space and control characters), in well-formed UTF-8. The reason
// is valid UTF-8 whatever `iri` holds ("it contains U+000A at byte 9").
std::optional<std::string> iri_problem(std::string_view iri);
// iri_problem(iri) finds nothing: one pass over the bytes, for the hot paths.
bool is_writable_iri(std::string_view iri) noexcept;

// `iri` itself when iri_problem() finds nothing; else a valid IRI standing for it: each byte
// that may not appear percent-encoded and, without a scheme, under urn:glassbox:iri: . The
// explain builder writes every IRI it is handed through this, so no trace holds an IRI that
// N-Triples rejects.
std::string writable_iri(std::string_view iri);

// urn:glassbox:agent:worker:<service>
std::string worker_agent_uri(std::string_view service);
// urn:glassbox:agent:model:<model>, bytes outside [A-Za-z0-9._~-] percent-encoded.
std::string model_agent_uri(std::string_view model);
// urn:glassbox:agent:user:<name>, percent-encoded as model_agent_uri: who asked for a change.
std::string user_agent_uri(std::string_view name);

}  // namespace glassbox::schema::explain
