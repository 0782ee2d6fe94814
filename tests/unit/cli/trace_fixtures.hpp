// `show` replies built with the explain builders (an echo chain; a graph-RAG chain with focus
// edges, citations and a sub-trace), shared by the renderer unit tests and the interop render dump.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/time_format.hpp"
#include "schema/explain_builder.hpp"
#include "schema/term_json.hpp"

namespace glassbox::testing {

using TimePoint = std::chrono::system_clock::time_point;

// 2025-01-02T03:04:05.000Z plus `ms`.
inline TimePoint fixture_time(int ms = 0) {
    return std::chrono::system_clock::time_point{std::chrono::seconds{1735787045}} +
           std::chrono::milliseconds{ms};
}

inline nlohmann::json fixture_event(std::uint64_t seq, const std::string& explain_id,
                                    const std::string& state,
                                    const std::vector<schema::Triple>& triples) {
    nlohmann::json encoded = nlohmann::json::array();
    for (const auto& triple : triples) encoded.push_back(schema::encode(triple));
    return {{"seq", seq},
            {"explain_id", explain_id},
            {"state", state},
            {"received", base::format_xsd_datetime(fixture_time(static_cast<int>(seq) * 10 + 1))},
            {"triples", std::move(encoded)}};
}

inline nlohmann::json fixture_summary(const std::string& session, const std::string& kind,
                                      const std::string& question, const std::string& status,
                                      std::int64_t duration_ms, std::int64_t events) {
    return {{"session", session},
            {"kind", kind},
            {"question", question},
            {"parent", nullptr},
            {"started", base::format_xsd_datetime(fixture_time())},
            {"ended", base::format_xsd_datetime(fixture_time(static_cast<int>(duration_ms)))},
            {"duration_ms", duration_ms},
            {"status", status},
            {"service", kind},
            {"worker", kind + "-host-1/1"},
            {"events", events}};
}

// Echo: Question → Synthesis; the synthesis event carries trace_end, as the echo worker sends it.
inline nlohmann::json echo_show_reply(const std::string& uuid, const std::string& question,
                                      std::optional<std::string> parent_uri = std::nullopt) {
    namespace ex = schema::explain;
    const auto run = *ex::RunUris::from_uuid(uuid);
    const std::optional<std::string_view> parent =
        parent_uri ? std::optional<std::string_view>(*parent_uri) : std::nullopt;
    auto first =
        ex::echo_question(run, question, fixture_time(), ex::worker_agent_uri("echo"), parent);
    auto last = ex::echo_synthesis(run, question, fixture_time(2), std::chrono::milliseconds{1});
    for (auto& t : ex::trace_end(run, fixture_time(3), schema::TraceStatus::kComplete))
        last.push_back(std::move(t));
    nlohmann::json summary = fixture_summary(run.question(), "echo", question, "complete", 3, 2);
    // The summary names the parent session (docs/traces.md §2); the calling step is in the triples.
    if (parent_uri) summary["parent"] = ex::RunUris::from_uri(*parent_uri)->question();
    return {
        {"session", summary},
        {"events", nlohmann::json::array({fixture_event(0, run.question(), "open", first),
                                          fixture_event(1, run.synthesis(), "complete", last)})},
        {"subtraces", nlohmann::json::array()}};
}

// Graph RAG: Question → Grounding → Exploration → Focus (two edges with sources) → Synthesis (a
// citation), with an echo sub-trace called from the focus step. The model agent's triples appear in
// two events (the same triple stored twice: one RDF triple).
inline nlohmann::json graph_rag_show_reply(
    const std::string& uuid = "0b7c6a52-3f4e-4d1a-9c2b-5e8f7a6d4c3b",
    const std::string& sub_uuid = "1c8d7b63-405f-4e2b-8d3c-6f9a8b7e5d4c") {
    namespace ex = schema::explain;
    const auto run = *ex::RunUris::from_uuid(uuid);
    auto step = [](int ms, std::optional<std::string> from) {
        ex::StepInfo info;
        info.generated_at = fixture_time(ms);
        info.derived_from = std::move(from);
        info.duration = std::chrono::milliseconds{6};
        info.input_tokens = 120;
        info.output_tokens = 30;
        info.model = "extractive";
        return info;
    };
    const auto question =
        ex::question(run, "Who wrote \"Dune\"?", fixture_time(), ex::worker_agent_uri("graph-rag"));
    const auto grounding = ex::grounding(run, step(5, std::nullopt), {"Dune", "author"});
    const auto exploration =
        ex::graph_exploration(run, step(10, run.grounding()), {"urn:kg:dune"}, 42);

    ex::SelectedEdge author;
    author.edge = schema::make_triple(schema::iri("urn:kg:dune"), schema::iri("urn:kg:author"),
                                      schema::iri("urn:kg:herbert"));
    author.score = 0.93;
    author.concept_label = "author";
    author.reasoning = "states the author";
    author.source = ex::SourceRef{"urn:doc:dune/c3", "urn:doc:dune", 1200, 800};
    author.data_tier = 1;
    ex::SelectedEdge year;
    year.edge = schema::make_triple(
        schema::iri("urn:kg:dune"), schema::iri("urn:kg:published"),
        schema::typed_literal("1965", "http://www.w3.org/2001/XMLSchema#gYear"));
    year.score = 0.5;
    year.concept_label = "Dune";
    year.reasoning = "line one\nline two \"quoted\" \\ back\ttab";
    year.source = ex::SourceRef{"urn:doc:dune/c4", "urn:doc:dune", std::nullopt, std::nullopt};
    year.data_tier = 3;
    const auto focus = ex::graph_focus(run, step(20, run.exploration()), {author, year});

    ex::StoredText answer{"Frank Herbert wrote Dune.", std::nullopt};
    ex::Citation citation{0, 13, {run.edge_selection(0)}};
    const auto synthesis = ex::synthesis(run, step(30, run.focus()), answer, {citation},
                                         ex::ShortAnswer{"Frank Herbert", {run.edge_selection(0)}});
    auto last = synthesis;
    for (auto& t : ex::trace_end(run, fixture_time(31), schema::TraceStatus::kComplete))
        last.push_back(std::move(t));

    nlohmann::json sub = echo_show_reply(sub_uuid, "check the focus", run.focus());
    nlohmann::json summary =
        fixture_summary(run.question(), "graph-rag", "Who wrote \"Dune\"?", "complete", 31, 5);
    summary["worker"] = "graph-rag-host-1/1";
    return {
        {"session", summary},
        {"events", nlohmann::json::array({fixture_event(0, run.question(), "open", question),
                                          fixture_event(1, run.grounding(), "open", grounding),
                                          fixture_event(2, run.exploration(), "open", exploration),
                                          fixture_event(3, run.focus(), "open", focus),
                                          fixture_event(4, run.synthesis(), "complete", last)})},
        {"subtraces", nlohmann::json::array({sub})}};
}

}  // namespace glassbox::testing
