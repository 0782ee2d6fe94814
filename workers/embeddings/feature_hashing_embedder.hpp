// The default embedder: text/'s signed feature hashing of words, word pairs and character
// trigrams. No model, no network, deterministic and stable across platforms and runs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/feature_hashing.hpp"
#include "workers/embeddings/embedder.hpp"

namespace glassbox::embeddings {

inline constexpr std::string_view kHashingModel = text::kFeatureHashingModel;
inline constexpr std::uint32_t kDefaultHashingDim = text::kDefaultFeatureHashingDim;

// Embeds each text with text::feature_vector (text/feature_hashing.hpp says which features and
// weights): L2-normalised, the zero vector for a text without features.
class FeatureHashingEmbedder final : public Embedder {
public:
    // dim must be ≥ 1 (checked by EmbeddingsConfig; 0 here is a programmer error: throws
    // std::invalid_argument).
    explicit FeatureHashingEmbedder(std::uint32_t dim = kDefaultHashingDim);

    using Embedder::embed;
    base::Result<schema::EmbeddingsResponse> embed(std::span<const std::string> texts,
                                                   const EmbedOptions& options) override;
    std::string model() const override { return std::string(kHashingModel); }
    std::uint32_t dim() const override { return dim_; }

    // One text's vector (what embed() computes per text).
    std::vector<double> embed_one(std::string_view text) const;

private:
    std::uint32_t dim_;
};

}  // namespace glassbox::embeddings
