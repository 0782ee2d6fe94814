// How `glassbox traces diff` and `traces replay` show a comparison of two runs (the `trace`
// service's `compare` reply, docs/traces.md, "Replay and compare"): both answers and whether
// the answer changed, the confidence before and after, and the sources and facts added (+) and
// removed (-).
#pragma once

#include <string>
#include <vector>

#include "cli/render/trace_render.hpp"
#include "schema/messages_trace.hpp"

namespace glassbox::cli::render {

// The text of `comparison`, e.g.
//   a  9f3c…  graph-rag  complete  21 ms  2026-11-30T15:52:33.344Z
//   b  4e1d…  graph-rag  complete  25 ms  2026-11-30T16:10:02.101Z  (revises a)
//   question: Who founded the shipyard that built the MV Curlew?
//   answer: changed
//     a: Oskar Brenn founded Brenn and Daughters Shipyard, which built the MV Curlew.
//     b: Elin Brenn founded Brenn and Daughters Shipyard, which built the MV Curlew.
//   short answer: Oskar Brenn -> Elin Brenn
//   confidence: 97 % -> 61 % (-36 points)
//   sources: 1 added, 0 removed, 1 kept
//     + file:///kb/orrin-2.ttl
//   facts: 1 added, 1 removed, 24 kept
//     + Brenn and Daughters Shipyard foundedBy Elin Brenn
//     - Brenn and Daughters Shipyard foundedBy Oskar Brenn
// Entities are named by `labels` when they have one there, else by their IRI's local name; every
// text is escaped for the terminal.
std::string render_comparison(const schema::TraceComparison& comparison, const Labels& labels = {});

// The IRIs the facts added and removed name (subjects and objects), to ask labels for.
std::vector<std::string> comparison_iris(const schema::TraceComparison& comparison);

}  // namespace glassbox::cli::render
