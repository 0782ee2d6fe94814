// The `llm` bus service: a prompt template and its variables in, text or validated JSON out,
// with the model's name and token counts (docs/llm.md).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "schema/services.hpp"
#include "workers/llm/prompt_template.hpp"
#include "workers/llm/provider.hpp"
#include "workers/runtime/request_context.hpp"
#include "workers/runtime/worker.hpp"

namespace glassbox::llm {

struct LlmServiceOptions {
    // The service asked for vectors when a provider wants them (kg-edge-scoring on the
    // extractive provider); empty: never ask.
    std::string embeddings_service{schema::services::kEmbeddings};
    // One embeddings call may take this long, and at most a quarter of the time the request
    // has left.
    std::chrono::milliseconds embeddings_timeout{2'000};
    // After the embeddings service was missing, do not ask again for this long.
    std::chrono::milliseconds embeddings_backoff{30'000};
    // When the embeddings service answers with the built-in feature-hashing model
    // (text::kFeatureHashingModel, which a model name and a dimension fully determine), the next
    // requests for this long compute the same vectors here instead of a round trip; then the
    // service is asked again (so a reconfigured service is noticed). Zero: always ask.
    std::chrono::milliseconds builtin_embeddings_ttl{30'000};
};

// Request: schema::LlmRequest {"template", "variables": {name: string}, "streaming"}.
// FINAL: schema::encode(LlmResponse) {text, json?, model, in_token, out_token,
// end_of_stream: true}; `json` for JSON templates (validated against the template's schema;
// kg-edge-scoring holds exactly one score per given edge, in their order, and
// kg-edge-reasoning one reason per edge). With streaming, text templates first send PARTIAL
// {"text": piece} bodies whose concatenation is the final text.
// Errors: kInvalidRequest (a body that is not an LlmRequest, a missing or ill-formed
// variable: the message names it); kNotFound (unknown template); kUpstreamError (the model
// endpoint failed, could not be reached, or answered invalid JSON after the repair retry);
// kTimeout (the endpoint's own timeout) or DeadlineExceeded (the request's deadline);
// Cancelled.
// The worker runs it with WorkerConfig::text_body = reads_body_as_text (llm_request.hpp): bodies
// are then read from their text, without a tree; a body the runtime parsed gives the same answer.
runtime::Handler make_llm_handler(std::shared_ptr<const TemplateSet> templates,
                                  std::shared_ptr<Provider> provider,
                                  LlmServiceOptions options = {});

}  // namespace glassbox::llm
