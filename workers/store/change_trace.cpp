// The trace of a knowledge change: its activity, agents, counts, removed sources and removed
// facts as PROV-O triples, sent as the store run's explain messages.
#include "workers/store/change_trace.hpp"

#include <algorithm>

#include "base/time_format.hpp"
#include "schema/explain_builder.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::store {

namespace v = schema::vocab;
namespace explain = schema::explain;
using base::Result;
using schema::Term;
using schema::Triple;

namespace {

// Appends triples in urn:graph:retrieval; every IRI a user or a file gave goes through
// writable_iri (the vocabulary's own are writable).
class ChangeTriples {
public:
    explicit ChangeTriples(std::vector<Triple>& out) : out_(out) {}
    void iri(std::string_view s, std::string_view p, std::string_view o) {
        add(s, p, Term(schema::Iri{explain::writable_iri(o)}));
    }
    void literal(std::string_view s, std::string_view p, std::string_view value,
                 std::string_view datatype = {}) {
        add(s, p, Term(schema::Literal{std::string(value), std::string(datatype), {}}));
    }
    void integer(std::string_view s, std::string_view p, std::uint64_t n) {
        literal(s, p, std::to_string(n), schema::kXsdInteger);
    }
    void term(std::string_view s, std::string_view p, const Term& o) {
        if (o.is_iri()) return iri(s, p, o.as_iri().value);
        if (o.is_triple()) return literal(s, p, schema::to_ntriples(o));  // not RDF 1.1
        add(s, p, o);
    }

private:
    void add(std::string_view s, std::string_view p, Term o) {
        out_.push_back(schema::Triple{Term(schema::Iri{explain::writable_iri(s)}),
                                      Term(schema::Iri{std::string(p)}), std::move(o),
                                      std::string(v::kRetrievalGraph)});
    }
    std::vector<Triple>& out_;
};

std::vector<Triple> activity(const explain::RunUris& run, std::string_view worker_agent,
                             const KnowledgeChange& change, const ChangeContext& context) {
    std::vector<Triple> out =
        explain::question(run, context.description, context.started, worker_agent, std::nullopt,
                          std::nullopt, {}, context.collection);
    ChangeTriples e(out);
    const std::string q = run.question();
    e.iri(q, v::kRdfType, v::kKnowledgeChange);
    e.literal(q, v::kChangeKind, change.kind);
    if (!context.actor.empty()) {
        const std::string user = explain::user_agent_uri(context.actor);
        e.iri(user, v::kRdfType, v::kProvAgent);
        e.literal(user, v::kRdfsLabel, context.actor);
        e.iri(q, v::kProvWasAssociatedWith, user);
    }
    e.integer(q, v::kFactsAdded, change.facts_added);
    e.integer(q, v::kFactsRemoved, change.facts_removed);
    e.literal(q, v::kRemovedListed, change.removed_listed() ? "true" : "false",
              schema::kXsdBoolean);
    for (const auto& used : change.used) e.iri(q, v::kProvUsed, used);
    const std::string at = base::format_xsd_datetime(context.ended);
    for (const auto& gone : change.removed_sources) {
        e.iri(q, v::kRemovedSource, gone);
        e.iri(gone, v::kRdfType, v::kProvEntity);
        e.iri(gone, v::kProvWasInvalidatedBy, q);
        e.literal(gone, v::kProvInvalidatedAtTime, at, schema::kXsdDateTime);
    }
    return out;
}

void removed_fact(ChangeTriples& e, const explain::RunUris& run, std::size_t n,
                  const RemovedFact& removed) {
    const std::string q = run.question();
    const std::string r = run.removed_fact(n);
    e.iri(q, v::kRemovedFact, r);
    e.iri(r, v::kRdfType, v::kRdfStatement);
    e.iri(r, v::kRdfType, v::kProvEntity);
    e.term(r, v::kRdfSubject, removed.fact.s);
    e.term(r, v::kRdfPredicate, removed.fact.p);
    e.term(r, v::kRdfObject, removed.fact.o);
    if (removed.fact.graph) e.iri(r, v::kFactGraph, *removed.fact.graph);
    for (const auto& source : removed.sources) e.iri(r, v::kSourceDocument, source);
    e.iri(r, v::kProvWasInvalidatedBy, q);
}

}  // namespace

std::vector<std::vector<Triple>> change_trace_messages(const explain::RunUris& run,
                                                       std::string_view worker_agent,
                                                       const KnowledgeChange& change,
                                                       const ChangeContext& context) {
    std::vector<std::vector<Triple>> messages;
    messages.push_back(activity(run, worker_agent, change, context));
    for (std::size_t first = 0; first < change.removed.size(); first += kRemovedFactsPerMessage) {
        std::vector<Triple> slice;
        ChangeTriples e(slice);
        const std::size_t last = std::min(change.removed.size(), first + kRemovedFactsPerMessage);
        for (std::size_t n = first; n < last; ++n) removed_fact(e, run, n, change.removed[n]);
        messages.push_back(std::move(slice));
    }
    auto end = explain::trace_end(run, context.ended, schema::TraceStatus::kComplete);
    messages.back().insert(messages.back().end(), end.begin(), end.end());
    return messages;
}

Result<void> send_change_trace(runtime::RequestContext& ctx, const KnowledgeChange& change,
                               const ChangeContext& context) {
    const auto& run = ctx.run();
    auto messages =
        change_trace_messages(run, explain::worker_agent_uri(ctx.meta().service), change, context);
    for (std::size_t i = 0; i < messages.size(); ++i) {
        runtime::ExplainStep step;
        step.session = run.question();
        step.explain_id =
            i == 0 ? run.question() : run.removed_fact((i - 1) * kRemovedFactsPerMessage);
        step.triples = std::move(messages[i]);
        step.state = i + 1 == messages.size() ? runtime::ExplainState::kComplete
                                              : runtime::ExplainState::kOpen;
        if (auto sent = ctx.send_explain(step); !sent) return sent.error();
    }
    return {};
}

schema::KnowledgeChangeSummary change_summary(const KnowledgeChange& change,
                                              const std::string& collection,
                                              const std::string& trace) {
    schema::KnowledgeChangeSummary out;
    out.kind = change.kind;
    out.trace = trace;
    out.collection = collection;
    out.facts_added = change.facts_added;
    out.facts_removed = change.facts_removed;
    out.facts_kept = change.facts_kept;
    out.facts_unchanged = change.facts_unchanged;
    out.removed_listed = change.removed_listed();
    for (const auto& s : change.sources)
        out.sources.push_back({s.uri, s.added, s.removed, s.kept, s.unchanged});
    out.removed_sources = change.removed_sources;
    return out;
}

std::string change_description(const KnowledgeChange& change, std::string_view subject) {
    if (change.kind == kChangeReplace) {
        std::string text = "replace";
        for (std::size_t i = 0; i < change.used.size() && i < 3; ++i) text += " " + change.used[i];
        if (change.used.size() > 3)
            text += " and " + std::to_string(change.used.size() - 3) + " more";
        return text;
    }
    std::string text = change.kind;
    std::replace(text.begin(), text.end(), '-', ' ');
    return text + " " + std::string(subject.substr(0, 500));
}

}  // namespace glassbox::store
