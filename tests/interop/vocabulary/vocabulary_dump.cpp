// Writes every explain builder's output for a sample run of each chain as N-Quads, and the
// list of gb: terms, for the rdflib checks in check_vocabulary.py and prov_check.py.
#include <fstream>
#include <iostream>
#include <vector>

#include "schema/explain_builder.hpp"
#include "schema/triple_sink.hpp"
#include "schema/vocabulary.hpp"

namespace {

using namespace glassbox::schema;
using namespace glassbox::schema::explain;
using std::chrono::milliseconds;

class Trace {
public:
    void add(const std::vector<Triple>& triples) {
        for (const auto& t : triples) lines_.push_back(to_nquads(t));
    }
    const std::vector<std::string>& lines() const { return lines_; }

private:
    std::vector<std::string> lines_;
};

TimePoint t0() { return TimePoint(milliseconds(1735787045000)); }
TimePoint at(int ms) { return t0() + milliseconds(ms); }

StepInfo step(int ms, std::optional<std::string> from, const char* model = "extractive") {
    std::optional<std::string> model_name;
    if (model) model_name = model;  // nullptr: a step without a model (no tokens either)
    return StepInfo{at(ms),
                    std::move(from),
                    milliseconds(ms % 50 + 1),
                    model ? std::optional<std::uint64_t>(120) : std::nullopt,
                    model ? std::optional<std::uint64_t>(30) : std::nullopt,
                    model_name};
}

// `info` with the embeddings call its step made.
StepInfo embedded(StepInfo info, int ms) {
    info.embeddings = EmbeddingsCall{"glassbox-hashing-v1", 2, 384, at(ms - 3), milliseconds(2)};
    return info;
}

// graph RAG; with `parent`, as a sub-trace of that step.
std::string graph_rag(Trace& out, const RunUris& run, std::optional<std::string> parent = {}) {
    out.add(question(run, "Who wrote “Dune”?", at(0), worker_agent_uri("graph-rag"),
                     parent ? std::optional<std::string_view>(*parent) : std::nullopt));
    out.add(grounding(run, step(5, std::nullopt), {"Dune", "author"}));
    out.add(graph_exploration(
        run, embedded(step(10, run.grounding()), 10), {"urn:kg:dune", "urn:kg:herbert"}, 42,
        {ExploredEdge{make_triple(iri("urn:kg:dune"), iri("urn:kg:author"), iri("urn:kg:herbert")),
                      1},
         ExploredEdge{
             make_triple(iri("urn:kg:herbert"), iri("urn:kg:born"), lang_literal("Tacoma", "en")),
             2},
         ExploredEdge{make_triple(quoted(make_triple(iri("urn:kg:herbert"), iri("urn:kg:said"),
                                                     iri("urn:kg:fear"))),
                                  iri("urn:kg:assertedBy"), blank("b1")),
                      2}}));
    SelectedEdge e0{make_triple(iri("urn:kg:dune"), iri("urn:kg:author"), iri("urn:kg:herbert")),
                    0.93,
                    "author",
                    "states the author",
                    SourceRef{"urn:doc:dune/c3", "urn:doc:dune", 1200, 800},
                    1};
    SelectedEdge e1{make_triple(iri("urn:kg:dune"), iri("urn:kg:published"),
                                typed_literal("1965", "http://www.w3.org/2001/XMLSchema#gYear")),
                    0.61,
                    "Dune",
                    "gives the date",
                    SourceRef{"urn:doc:dune/c4", "urn:doc:dune", 2000, 700},
                    3};
    SelectedEdge e2{make_triple(quoted(make_triple(iri("urn:kg:herbert"), iri("urn:kg:said"),
                                                   lang_literal("la peur tue l'esprit", "fr"))),
                                iri("urn:kg:assertedBy"), blank("b1")),
                    0.2,
                    "",
                    "",
                    std::nullopt,
                    4};
    out.add(graph_focus(run, step(20, run.exploration()), {e0, e1, e2}));
    const std::string answer = "Frank Herbert wrote Dune, published in 1965.";
    out.add(synthesis(
        run, step(30, run.focus()), StoredText{answer, {}},
        {Citation{0, 24, {run.edge_selection(0)}}, Citation{26, 44, {run.edge_selection(1)}},
         Citation{0, 200, {run.edge_selection(0)}}},
        ShortAnswer{"Frank Herbert", {run.edge_selection(0)}}));
    out.add(trace_end(run, at(31), TraceStatus::kComplete));
    return run.synthesis();
}

std::string document_rag(Trace& out, const RunUris& run, std::optional<std::string> parent = {}) {
    out.add(question(run, "When was Dune published?", at(0), worker_agent_uri("document-rag"),
                     parent ? std::optional<std::string_view>(*parent) : std::nullopt));
    out.add(grounding(run, step(3, std::nullopt), {"Dune", "publication"}));
    out.add(document_exploration(
        run, step(8, run.grounding()),
        {RetrievedChunk{SourceRef{"urn:doc:dune/c4", "urn:doc:dune", 2000, 700}, 0.8, 1},
         RetrievedChunk{SourceRef{"urn:doc:other/c1", "urn:doc:other", 0, 500}, 0.4, 2}}));
    out.add(
        document_focus(run, step(12, run.exploration()), {RankedChunk{0, 0.95, "mentions 1965"}}));
    out.add(synthesis(run, step(20, run.focus()), StoredText{"In 1965.", run.text("answer")},
                      {Citation{3, 7, {run.ranked_chunk(0), run.retrieved_chunk(0)}}}));
    out.add(trace_end(run, at(21), TraceStatus::kComplete));
    return run.synthesis();
}

std::string agent(Trace& out, const RunUris& run, std::optional<std::string> parent = {}) {
    out.add(question(run, "Who wrote Dune and when?", at(0), worker_agent_uri("agent"),
                     parent ? std::optional<std::string_view>(*parent) : std::nullopt));
    AgentAction first{"I should search the graph", "graph-rag", R"({"question":"author of Dune"})"};
    first.candidates = {"knowledge-query", "document-query", "triples-query"};
    out.add(analysis(run, 0, step(5, std::nullopt, "gpt-4o-mini"), first));
    out.add(observation(run, 0, step(9, run.analysis(0), nullptr), StoredText{"Frank Herbert", {}},
                        ObservationInfo{false, {}}));
    out.add(analysis(run, 1, step(12, run.observation(0), "gpt-4o-mini"),
                     AgentAction{"and the date", "document-rag", R"({"question":"Dune date"})"}));
    out.add(observation(run, 1, step(15, run.analysis(1), nullptr),
                        StoredText{"1965", run.text("obs1")}));
    out.add(analysis(run, 2, step(16, run.observation(1), "gpt-4o-mini"),
                     AgentAction{"I know enough", "", ""}));
    out.add(conclusion(run, step(18, run.analysis(2), "gpt-4o-mini"),
                       StoredText{"Herbert, 1965.", {}}, "final-answer",
                       std::string("Frank Herbert")));
    // The agent's answer sources (docs/agent.md §4), on its own Conclusion.
    auto sources = triple_list();
    answer_provenance(
        sources, run,
        AnswerProvenance{
            "agent:react > tool:triples-query", 1, "agent", {{"file:///data/kb.nt", 1, "agent"}}});
    out.add(sources.take());
    out.add(trace_end(run, at(19), TraceStatus::kComplete));
    return run.conclusion();
}

void query_routing(Trace& out) {
    const auto run = RunUris::generate();
    out.add(question(run, "Who wrote Dune?", at(0), worker_agent_uri("query"), std::nullopt,
                     std::string_view("chat-0001")));
    out.add(routing_decision(run, step(2, std::nullopt, nullptr),
                             Routing{"rules",
                                     {"who-question", "entity-mention"},
                                     0.8,
                                     "graph-rag",
                                     {{"graph-entities", 1.0}, {"document-keyword", 3.5}},
                                     "Who wrote Dune?",
                                     "it -> Dune (question-entity)"}));
    const auto first = graph_rag(out, RunUris::generate(), run.routing_decision());
    ReflectionInfo judged{"llm", 0.25, "the edges name no author", "", "gpt-4o-mini",
                          120,   14,   milliseconds(310)};
    out.add(escalation(run, 0, step(40, first, nullptr),
                       EscalationInfo{"answer not relevant", 0.25, "agent", "graph-rag", judged,
                                      "Which author wrote the novel Dune?", ""}));
    const auto second = agent(out, RunUris::generate(), run.escalation(0));
    AnswerProvenance provenance{
        "route:rules > graph-rag:traversal > escalation > agent:react",
        3,
        "agent",
        {{"urn:doc:dune", 1, "agent", 0.0323}, {"file:///data/kb.nt", 3, "graph-rag", 0.0161}}};
    out.add(routed_conclusion(run, step(60, second, nullptr), StoredText{"Frank Herbert.", {}},
                              provenance, std::string("Frank Herbert")));
    out.add(reflection(run.conclusion(), ReflectionInfo{"model-free", 0.8, "coverage 1.00, decided",
                                                        "llm: the reply did not parse"}));
    out.add(trace_end(run, at(61), TraceStatus::kComplete));
}

void echo(Trace& out) {
    const auto run = RunUris::generate();
    out.add(echo_question(run, "ping ☃", at(0), worker_agent_uri("echo")));
    out.add(echo_synthesis(run, "ping ☃", at(1), milliseconds(1)));
    out.add(trace_end(run, at(2), TraceStatus::kIncomplete));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: vocabulary_dump <out.nq> <terms.txt>\n";
        return 2;
    }
    Trace trace;
    graph_rag(trace, RunUris::generate());
    document_rag(trace, RunUris::generate());
    agent(trace, RunUris::generate());
    query_routing(trace);
    echo(trace);

    std::ofstream nq(argv[1], std::ios::binary);
    for (const auto& line : trace.lines()) nq << line << '\n';
    std::ofstream terms(argv[2], std::ios::binary);
    for (auto term : vocab::glassbox_terms()) terms << term << '\n';
    if (!nq || !terms) {
        std::cerr << "vocabulary_dump: cannot write output\n";
        return 1;
    }
    std::cout << "wrote " << trace.lines().size() << " quads\n";
    return 0;
}
