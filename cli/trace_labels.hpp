// Names for the entities a trace mentions, asked of the knowledge store: the default `traces
// show` tree and the `invoke -x` lines name kept edges by label, as explain messages carry IRIs.
#pragma once

#include "cli/client_options.hpp"
#include "cli/render/trace_render.hpp"
#include "schema/messages_trace.hpp"

namespace glassbox::cli {

// The labels of render::iris_to_label(trace), from the store's `labels` op in the collection the
// trace's Question names (gb:collection), else in the configured client.collection. Best effort
// and bounded (one request, a few seconds): no labels when the store is down, the collection
// is gone or the reply is malformed — the tree then falls back to the IRIs' local names.
render::Labels fetch_trace_labels(const ClientOptions& client, const schema::TraceDetail& trace);

// The labels of `iris` in `collection`, asked the same way (best effort, bounded).
render::Labels ask_store_labels(const ClientOptions& client, const std::string& collection,
                                std::vector<std::string> iris);

// For `invoke -x` (render::StepSummaries::set_labeler): each message's entities asked of the
// store in `collection` as the message arrives.
render::Labeler store_labeler(const ClientOptions& client, std::string collection);

}  // namespace glassbox::cli
