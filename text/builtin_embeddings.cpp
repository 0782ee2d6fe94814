#include "text/builtin_embeddings.hpp"

#include "text/feature_hashing.hpp"

namespace glassbox::text {
namespace {

std::int64_t steady_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

std::uint32_t BuiltinEmbeddings::dim_now() const {
    if (ttl_.count() <= 0 || steady_ms() >= until_ms_.load()) return 0;
    return dim_.load();
}

void BuiltinEmbeddings::saw(std::string_view model, std::uint32_t dim) {
    if (ttl_.count() <= 0) return;
    if (model != kFeatureHashingModel || dim == 0) {
        until_ms_.store(0);
        return;
    }
    dim_.store(dim);
    until_ms_.store(steady_ms() + ttl_.count());
}

std::vector<std::vector<double>> feature_vectors(const std::vector<std::string>& texts,
                                                 std::uint32_t dim) {
    std::vector<std::vector<double>> vectors;
    vectors.reserve(texts.size());
    for (const auto& t : texts) vectors.push_back(feature_vector(t, dim));
    return vectors;
}

}  // namespace glassbox::text
