// The `embeddings` bus service: {texts} in, {vectors, model, dim} out (DESIGN §3).
#pragma once

#include <memory>
#include <string_view>

#include "workers/embeddings/embedder.hpp"
#include "workers/embeddings/embeddings_config.hpp"
#include "workers/runtime/request_context.hpp"
#include "workers/runtime/worker.hpp"

namespace glassbox::embeddings {

// Request: schema::EmbeddingsRequest {"texts": [string, ...]} (an empty list is answered with
// no vectors). FINAL: schema::encode(EmbeddingsResponse) {"vectors", "model", "dim"}.
// Errors: kInvalidRequest for a body without a "texts" array of strings, more than
// limits.max_texts texts or a text above limits.max_text_bytes (the message names the limit);
// provider failures as kUpstreamError (unreachable, malformed or non-2xx answers) or kTimeout
// (the provider's own timeout); the request's cancellation/deadline as DeadlineExceeded or
// Cancelled. The request's deadline bounds every HTTP attempt. No explain messages: this is a
// supporting service, its callers record what they embedded.
// `embedder` is shared because every worker slot's handler copy calls the same one; it must
// be thread-safe (all Embedders here are).
runtime::Handler make_embeddings_handler(std::shared_ptr<Embedder> embedder, Limits limits = {});

}  // namespace glassbox::embeddings
