// The embeddings handler: check the request against the limits, embed, answer or map the error.
#include "workers/embeddings/embeddings_service.hpp"

#include <chrono>
#include <stdexcept>

#include "schema/json_fast.hpp"
#include "schema/messages.hpp"

namespace glassbox::embeddings {

using base::Error;
using base::ErrorType;
using base::make_error;

namespace {

constexpr std::chrono::milliseconds kDeadlineSlack{10};

Error invalid(std::string message) {
    return make_error(ErrorType::kInvalidRequest, std::move(message));
}

base::Result<schema::EmbeddingsRequest> check_request(const nlohmann::json& body,
                                                      const Limits& limits) {
    if (!body.is_object())
        return invalid("embeddings expects a JSON object {\"texts\": [\"...\", ...]}");
    const auto texts = body.find("texts");
    if (texts == body.end() || !texts->is_array())
        return invalid("\"texts\" must be an array of strings");
    // Before decoding: an oversized request is refused without copying its texts.
    if (texts->size() > limits.max_texts) {
        return invalid("\"texts\" has " + std::to_string(texts->size()) +
                       " texts; the limit (max_texts) is " + std::to_string(limits.max_texts) +
                       " per request");
    }
    auto request = schema::decode<schema::EmbeddingsRequest>(body);
    if (!request) return invalid(request.error().message);
    for (std::size_t i = 0; i < request->texts.size(); ++i) {
        if (request->texts[i].size() > limits.max_text_bytes) {
            return invalid(
                "texts[" + std::to_string(i) + "] has " + std::to_string(request->texts[i].size()) +
                " bytes; the limit (max_text_bytes) is " + std::to_string(limits.max_text_bytes));
        }
    }
    return request;
}

// On the bus, ServiceUnavailable means "no worker for this service": a provider that cannot be
// reached is this service's upstream failing, so it travels as UpstreamError.
Error map_provider_error(Error error) {
    if (error.type == ErrorType::kServiceUnavailable) {
        error.type = ErrorType::kUpstreamError;
    } else if (error.type == ErrorType::kInvalidRequest) {
        // Only a bad provider URL gives this; the caller's request was fine.
        error.type = ErrorType::kInternal;
    }
    return error;
}

void handle(runtime::RequestContext& context, Embedder& embedder, const Limits& limits) {
    auto request = check_request(context.body(), limits);
    if (!request) {
        (void)context.fail(request.error());
        return;
    }
    EmbedOptions options;
    options.deadline = context.meta().deadline;
    options.cancelled = [&context] { return context.cancelled(); };
    auto result = embedder.embed(request->texts, options);
    if (!result) {
        if (context.cancelled()) {
            (void)context.fail(context.cancellation_error());
        } else if (result.error().type == ErrorType::kTimeout &&
                   context.remaining() <= kDeadlineSlack) {
            // curl's timers may fire a hair before our clock says the deadline passed.
            (void)context.fail(make_error(
                ErrorType::kDeadlineExceeded,
                "the request's deadline passed while embedding: " + result.error().message));
        } else {
            (void)context.fail(map_provider_error(result.error()));
        }
        return;
    }
    (void)context.reply_text(schema::encode_text(*result));
}

}  // namespace

runtime::Handler make_embeddings_handler(std::shared_ptr<Embedder> embedder, Limits limits) {
    if (!embedder) throw std::invalid_argument("make_embeddings_handler needs an embedder");
    return [embedder = std::move(embedder), limits](runtime::RequestContext& context) {
        handle(context, *embedder, limits);
    };
}

}  // namespace glassbox::embeddings
