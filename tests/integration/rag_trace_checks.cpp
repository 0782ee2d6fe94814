// Checks of RAG explain traces (see rag_trace_checks.hpp).
#include "tests/integration/rag_trace_checks.hpp"

#include <cstdlib>
#include <regex>
#include <sstream>

#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::integration::rag {

using nlohmann::json;
using schema::Term;
namespace vocab = schema::vocab;

std::string RagRun::describe() const {
    std::ostringstream out;
    for (const auto& m : messages) out << "  " << m.describe().substr(0, 600) << "\n";
    for (const auto& f : decode_failures) out << "  decode failure: " << f << "\n";
    return out.str();
}

RagRun decode_run(std::vector<GbcMessage> messages) {
    RagRun run;
    for (const auto& m : messages) {
        if (m.is_partial("explain")) {
            auto decoded = schema::decode<schema::ExplainMessage>(m.json());
            if (decoded) {
                run.explains.push_back(std::move(decoded).value());
            } else {
                run.decode_failures.push_back(decoded.error().describe());
            }
        } else if (m.is_partial("data")) {
            auto decoded = schema::decode<schema::RagResponse>(m.json());
            if (decoded) {
                run.streamed += decoded->response;
                ++run.data_partials;
            } else {
                run.decode_failures.push_back(decoded.error().describe());
            }
        } else if (m.is_final()) {
            run.final = m.json();
        } else if (m.is_error()) {
            run.error_type = m.error_type;
            run.error_message = m.message;
        }
    }
    run.messages = std::move(messages);
    return run;
}

TraceGraph::TraceGraph(const std::vector<schema::ExplainMessage>& explains) {
    for (const auto& e : explains)
        all_.insert(all_.end(), e.explain_triples.begin(), e.explain_triples.end());
    for (const auto& t : all_) by_subject_[schema::to_ntriples(t.s)].push_back(&t);
}

std::vector<Term> TraceGraph::values(const Term& node, std::string_view predicate) const {
    std::vector<Term> out;
    std::set<std::string> seen;
    const auto it = by_subject_.find(schema::to_ntriples(node));
    if (it == by_subject_.end()) return out;
    for (const auto* t : it->second) {
        if (t->p.is_iri() && t->p.as_iri().value == predicate &&
            seen.insert(schema::to_ntriples(t->o)).second) {
            out.push_back(t->o);
        }
    }
    return out;
}

std::optional<Term> TraceGraph::one(const Term& node, std::string_view predicate) const {
    auto all = values(node, predicate);
    if (all.size() != 1) return std::nullopt;
    return all.front();
}

std::optional<std::string> TraceGraph::text(const Term& node, std::string_view predicate) const {
    auto term = one(node, predicate);
    if (!term || !term->is_literal()) return std::nullopt;
    return term->as_literal().value;
}

bool TraceGraph::has_type(const Term& node, std::string_view type) const {
    for (const auto& t : values(node, vocab::kRdfType)) {
        if (t.is_iri() && t.as_iri().value == type) return true;
    }
    return false;
}

std::string run_uuid(const std::string& uri) {
    static const std::regex pattern(
        "^urn:glassbox:([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}):.*");
    std::smatch match;
    return std::regex_match(uri, match, pattern) ? match[1].str() : std::string{};
}

std::size_t code_points(const std::string& text) {
    std::size_t n = 0;
    for (char c : text) {
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    }
    return n;
}

std::vector<std::string> step_uris(const RagRun& run) {
    std::vector<std::string> out;
    for (const auto& e : run.explains) {
        if (e.trace_status == schema::TraceStatus::kError && e.explain_id == e.session &&
            !out.empty())
            continue;
        out.push_back(e.explain_id);
    }
    return out;
}

namespace {

std::string gb(const std::string& local) { return std::string(vocab::kGbNs) + local; }

void collect_iris(const Term& term, std::vector<std::string>& out) {
    if (term.is_iri()) out.push_back(term.as_iri().value);
    if (term.is_triple()) {
        collect_iris(term.as_triple().s, out);
        collect_iris(term.as_triple().p, out);
        collect_iris(term.as_triple().o, out);
    }
}

const std::set<std::string>& integer_predicates() {
    static const std::set<std::string> p{std::string(vocab::kDurationMs),
                                         std::string(vocab::kInputTokens),
                                         std::string(vocab::kOutputTokens),
                                         std::string(vocab::kEdgeCount),
                                         std::string(vocab::kChunkCount),
                                         std::string(vocab::kSpanStart),
                                         std::string(vocab::kSpanEnd),
                                         std::string(vocab::kCharOffset),
                                         std::string(vocab::kCharLength),
                                         std::string(vocab::kDataTier),
                                         std::string(vocab::kVectorRank),
                                         std::string(vocab::kKeywordRank),
                                         std::string(vocab::kEmbeddingInputs),
                                         std::string(vocab::kEmbeddingDimensions),
                                         std::string(vocab::kEmbeddingDurationMs)};
    return p;
}
const std::set<std::string>& double_predicates() {
    static const std::set<std::string> p{std::string(vocab::kScore),
                                         std::string(vocab::kVectorScore),
                                         std::string(vocab::kKeywordScore)};
    return p;
}
const std::set<std::string>& time_predicates() {
    static const std::set<std::string> p{
        std::string(vocab::kProvStartedAtTime), std::string(vocab::kProvEndedAtTime),
        std::string(vocab::kProvGeneratedAtTime), std::string(vocab::kEmbeddingStartedAt)};
    return p;
}

void check_literal_types(const std::vector<schema::Triple>& triples) {
    static const std::regex date_time(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$)");
    static const std::regex integer(R"(^-?\d+$)");
    for (const auto& t : triples) {
        if (!t.p.is_iri()) continue;
        const std::string& p = t.p.as_iri().value;
        const std::string shown = schema::to_ntriples(t);
        if (integer_predicates().count(p)) {
            ASSERT_TRUE(t.o.is_literal()) << shown;
            EXPECT_EQ(t.o.as_literal().datatype, schema::kXsdInteger) << shown;
            EXPECT_TRUE(std::regex_match(t.o.as_literal().value, integer)) << shown;
        } else if (double_predicates().count(p)) {
            ASSERT_TRUE(t.o.is_literal()) << shown;
            EXPECT_EQ(t.o.as_literal().datatype, schema::kXsdDouble) << shown;
            char* end = nullptr;
            const std::string& v = t.o.as_literal().value;
            (void)std::strtod(v.c_str(), &end);
            EXPECT_TRUE(!v.empty() && end == v.c_str() + v.size()) << shown;
        } else if (time_predicates().count(p)) {
            ASSERT_TRUE(t.o.is_literal()) << shown;
            EXPECT_EQ(t.o.as_literal().datatype, schema::kXsdDateTime) << shown;
            EXPECT_TRUE(std::regex_match(t.o.as_literal().value, date_time)) << shown;
        }
    }
}

}  // namespace

void check_chain(const RagRun& run, const ChainExpectation& expected) {
    ASSERT_TRUE(run.decode_failures.empty()) << run.describe();
    ASSERT_FALSE(run.explains.empty()) << "no explain message\n" << run.describe();
    const std::string session = run.explains.front().session;
    const std::string uuid = run_uuid(session);
    ASSERT_FALSE(uuid.empty()) << session;
    ASSERT_EQ(session, "urn:glassbox:" + uuid + ":question");
    const Term question = schema::iri(session);

    // Exact steps, in order; seq 0..n-1; every message of one session, in urn:graph:retrieval.
    const bool error_end = expected.status == "error";
    const std::size_t messages = expected.steps.size() + (error_end ? 1 : 0);
    ASSERT_EQ(run.explains.size(), messages) << run.describe();
    const TraceGraph graph(run.explains);
    for (std::size_t i = 0; i < run.explains.size(); ++i) {
        const auto& e = run.explains[i];
        EXPECT_EQ(e.seq, i);
        EXPECT_EQ(e.session, session);
        EXPECT_EQ(e.explain_graph, vocab::kRetrievalGraph);
        EXPECT_EQ(e.service, expected.service);
        EXPECT_EQ(e.parent_uri, expected.parent_uri);
        EXPECT_FALSE(e.explain_triples.empty()) << "message " << i;
        for (const auto& t : e.explain_triples) {
            EXPECT_EQ(t.graph, std::optional<std::string>(vocab::kRetrievalGraph))
                << schema::to_nquads(t);
        }
        const bool last = i + 1 == run.explains.size();
        EXPECT_EQ(e.end_of_trace, last) << "message " << i;
        if (i < expected.steps.size()) {
            // explain_id is the step's own subject, typed as the expected step.
            EXPECT_TRUE(graph.has_type(schema::iri(e.explain_id), gb(expected.steps[i])))
                << "message " << i << " (" << e.explain_id << ") is not a gb:" << expected.steps[i];
            bool describes_itself = false;
            for (const auto& t : e.explain_triples)
                describes_itself = describes_itself || t.s == schema::iri(e.explain_id);
            EXPECT_TRUE(describes_itself) << e.explain_id;
            EXPECT_EQ(run_uuid(e.explain_id), uuid) << e.explain_id;
        } else {
            EXPECT_EQ(e.explain_id, session) << "the error end names the session";
        }
    }
    const auto& last = run.explains.back();
    EXPECT_EQ(schema::to_string(last.trace_status), expected.status);
    if (error_end) {
        ASSERT_TRUE(last.error.has_value()) << "the error end carries the error";
        EXPECT_EQ(base::to_string(last.error->type), expected.error_type) << last.error->describe();
    }
    EXPECT_EQ(graph.text(question, vocab::kStatus), std::optional<std::string>(expected.status));
    EXPECT_TRUE(graph.has_type(question, vocab::kProvActivity));
    EXPECT_TRUE(graph.has_type(question, vocab::kQuestion));
    EXPECT_TRUE(graph.text(question, vocab::kQuery).has_value());
    EXPECT_EQ(graph.values(question, vocab::kProvWasAssociatedWith),
              std::vector<Term>{schema::iri("urn:glassbox:agent:worker:" + expected.service)});

    // One UUID per run: every run-shaped URI in the trace is of this run (or the caller's step).
    std::set<std::string> uuids;
    for (const auto& t : graph.all()) {
        std::vector<std::string> iris;
        collect_iris(t.s, iris);
        collect_iris(t.o, iris);
        for (const auto& iri : iris) {
            if (expected.parent_uri &&
                (iri == *expected.parent_uri || run_uuid(iri) == run_uuid(*expected.parent_uri))) {
                continue;
            }
            if (auto u = run_uuid(iri); !u.empty()) uuids.insert(u);
        }
    }
    EXPECT_EQ(uuids, std::set<std::string>{uuid});

    // Derivation: every step generated by the Question, each derived from the one before.
    const auto steps = step_uris(run);
    for (std::size_t i = 1; i < steps.size(); ++i) {
        const Term step = schema::iri(steps[i]);
        EXPECT_EQ(graph.values(step, vocab::kProvWasGeneratedBy), std::vector<Term>{question})
            << steps[i];
        // The first step after the Question (an activity) is only generated by it.
        const auto derived = graph.values(step, vocab::kProvWasDerivedFrom);
        if (i >= 2) {
            EXPECT_NE(std::find(derived.begin(), derived.end(), schema::iri(steps[i - 1])),
                      derived.end())
                << steps[i] << " is not derived from " << steps[i - 1];
        }
        EXPECT_EQ(std::find(derived.begin(), derived.end(), question), derived.end())
            << steps[i] << ": an entity is never derived from an activity";
        EXPECT_FALSE(graph.has_type(step, vocab::kProvActivity)) << steps[i];
        EXPECT_TRUE(graph.has_type(step, vocab::kProvEntity)) << steps[i];
    }

    // Typed literals, and times that never go backwards.
    ASSERT_NO_FATAL_FAILURE(check_literal_types(graph.all()));
    const auto started = graph.text(question, vocab::kProvStartedAtTime);
    ASSERT_TRUE(started.has_value());
    std::string previous = *started;
    for (std::size_t i = 1; i < steps.size(); ++i) {
        const auto generated = graph.text(schema::iri(steps[i]), vocab::kProvGeneratedAtTime);
        ASSERT_TRUE(generated.has_value()) << steps[i];
        EXPECT_LE(previous, *generated)
            << steps[i];  // one fixed-width UTC format: text order is time order
        previous = *generated;
    }
    const auto ended = graph.text(question, vocab::kProvEndedAtTime);
    ASSERT_TRUE(ended.has_value());
    EXPECT_LE(previous, *ended);

    // A sub-trace: the Question used the calling step and was informed by the calling run.
    if (expected.parent_uri) {
        EXPECT_EQ(graph.values(question, vocab::kProvUsed),
                  std::vector<Term>{schema::iri(*expected.parent_uri)});
        EXPECT_EQ(graph.values(question, vocab::kProvWasInformedBy),
                  std::vector<Term>{
                      schema::iri("urn:glassbox:" + run_uuid(*expected.parent_uri) + ":question")});
    } else {
        EXPECT_TRUE(graph.values(question, vocab::kProvUsed).empty());
    }
}

}  // namespace glassbox::integration::rag
