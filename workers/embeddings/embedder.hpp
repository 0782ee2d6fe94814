// The Embedder interface: texts in, one vector per text out, for every embedding provider.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "base/result.hpp"
#include "schema/messages.hpp"

namespace glassbox::embeddings {

using Clock = std::chrono::steady_clock;

// Bounds of one embed() call, e.g. from the bus request being served.
struct EmbedOptions {
    std::optional<Clock::time_point> deadline;  // nullopt: the provider's own timeout only
    std::function<bool()> cancelled;            // polled on the calling thread; may be empty
};

// Implementations are safe to call from many threads at once (the service runs N handlers).
class Embedder {
public:
    virtual ~Embedder() = default;

    // One vector per text, in order, each of dim() numbers; `model` and `dim` filled in.
    virtual base::Result<schema::EmbeddingsResponse> embed(std::span<const std::string> texts,
                                                           const EmbedOptions& options) = 0;
    base::Result<schema::EmbeddingsResponse> embed(std::span<const std::string> texts) {
        return embed(texts, EmbedOptions{});
    }

    // The model name reported in every response.
    virtual std::string model() const = 0;
    // The vector dimension; 0 while not yet known (a remote model before its first answer).
    virtual std::uint32_t dim() const = 0;
};

}  // namespace glassbox::embeddings
