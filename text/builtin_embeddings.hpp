// When a worker may compute the built-in model's vectors itself instead of asking the
// `embeddings` service: after the service answered with kFeatureHashingModel, for a while. The
// model's name and dimension determine its vectors bit for bit (feature_hashing.hpp), so the
// vectors computed here are the ones the service would have sent, without the round trip.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::text {

// Shared by a worker's requests (every slot's copy of its handler); safe on many threads.
class BuiltinEmbeddings {
public:
    // `ttl` 0: the service is always asked.
    explicit BuiltinEmbeddings(std::chrono::milliseconds ttl) : ttl_(ttl) {}
    // The dimension to compute the vectors with now; 0 when the service must be asked.
    std::uint32_t dim_now() const;
    // An answer of the service: the built-in model opens the gate for `ttl`, another closes it.
    void saw(std::string_view model, std::uint32_t dim);

private:
    std::chrono::milliseconds ttl_;
    std::atomic<std::uint32_t> dim_{0};
    std::atomic<std::int64_t> until_ms_{0};  // steady clock
};

// feature_vector() of each of `texts`.
std::vector<std::vector<double>> feature_vectors(const std::vector<std::string>& texts,
                                                 std::uint32_t dim);

}  // namespace glassbox::text
