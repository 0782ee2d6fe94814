// The trace of a knowledge change (docs/knowledge.md, "Changing and retracting knowledge"): a
// run of the store service whose Question is the change activity (gb:KnowledgeChange), with who
// asked, what was added and removed, and each removed fact and source invalidated by it.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "schema/explain_uris.hpp"
#include "schema/messages.hpp"
#include "schema/term.hpp"
#include "workers/runtime/request_context.hpp"
#include "workers/store/knowledge_change.hpp"

namespace glassbox::store {

// Removed facts described per explain message (about 9 triples each): a message stays far
// below the broker's bound however many a change lists.
inline constexpr std::size_t kRemovedFactsPerMessage = 250;

struct ChangeContext {
    std::string collection;
    std::string actor;        // who asked (the OS user name the CLI sends); "" none
    std::string description;  // gb:query: "forget source file:///…"
    std::chrono::system_clock::time_point started{};
    std::chrono::system_clock::time_point ended{};
};

// The change's triples (in urn:graph:retrieval) as the messages of its trace, in order: the
// activity first, then the removed facts in slices; the last message ends the trace.
std::vector<std::vector<schema::Triple>> change_trace_messages(const schema::explain::RunUris& run,
                                                               std::string_view worker_agent,
                                                               const KnowledgeChange& change,
                                                               const ChangeContext& context);

// Sends them through the request's context (session = its run's Question), the last one ending
// the trace complete.
base::Result<void> send_change_trace(runtime::RequestContext& ctx, const KnowledgeChange& change,
                                     const ChangeContext& context);

// The reply's form of the change.
schema::KnowledgeChangeSummary change_summary(const KnowledgeChange& change,
                                              const std::string& collection,
                                              const std::string& trace);

// "forget source <uri>", "replace <uri> (and N more)", … (gb:query of the change).
std::string change_description(const KnowledgeChange& change, std::string_view subject = {});

}  // namespace glassbox::store
