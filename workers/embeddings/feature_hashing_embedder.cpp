// The feature-hashing embedder: text::feature_vector per text, with cancellation and deadline
// checks.
#include "workers/embeddings/feature_hashing_embedder.hpp"

#include <stdexcept>

namespace glassbox::embeddings {

using base::ErrorType;
using base::make_error;

namespace {

constexpr std::size_t kCancelCheckEvery = 256;

}  // namespace

FeatureHashingEmbedder::FeatureHashingEmbedder(std::uint32_t dim) : dim_(dim) {
    if (dim_ == 0)
        throw std::invalid_argument("FeatureHashingEmbedder needs a dimension of at least 1");
}

std::vector<double> FeatureHashingEmbedder::embed_one(std::string_view text) const {
    return text::feature_vector(text, dim_);
}

base::Result<schema::EmbeddingsResponse> FeatureHashingEmbedder::embed(
    std::span<const std::string> texts, const EmbedOptions& options) {
    schema::EmbeddingsResponse response;
    response.model = model();
    response.dim = dim_;
    response.vectors.reserve(texts.size());
    for (std::size_t i = 0; i < texts.size(); ++i) {
        if (i % kCancelCheckEvery == kCancelCheckEvery - 1) {
            if (options.cancelled && options.cancelled()) {
                return make_error(ErrorType::kCancelled, "embedding cancelled");
            }
            if (options.deadline && Clock::now() >= *options.deadline) {
                return make_error(ErrorType::kTimeout,
                                  "embedding did not finish before the deadline");
            }
        }
        response.vectors.push_back(embed_one(texts[i]));
    }
    return response;
}

}  // namespace glassbox::embeddings
