// OpenAI-compatible embeddings: batches of texts per POST, every answer checked before use.
#include "workers/embeddings/openai_embedder.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace glassbox::embeddings {

using nlohmann::json;

namespace {

// The vectors of one batch answer, in text order; `dim` is the expected size (0: take the first).
base::Result<std::vector<std::vector<double>>> parse_batch(std::string_view body, std::size_t count,
                                                           std::uint32_t dim,
                                                           const http::OpenAiClient& endpoint) {
    const auto malformed = [&](const std::string& why) { return endpoint.malformed(why); };
    auto read = endpoint.read_object(body);
    if (!read) return std::move(read).error();
    const json& answer = *read;
    const auto data = answer.find("data");
    if (data == answer.end() || !data->is_array()) return malformed("no \"data\" array");
    if (data->size() != count) {
        return malformed(std::to_string(data->size()) + " embeddings for " + std::to_string(count) +
                         " texts");
    }
    std::vector<std::vector<double>> vectors(count);
    std::vector<bool> seen(count, false);
    std::size_t expected = dim;
    for (std::size_t i = 0; i < count; ++i) {
        const json& item = (*data)[i];
        const std::string where = "data[" + std::to_string(i) + "]";
        if (!item.is_object()) return malformed(where + " is not an object");
        // Servers that omit "index" answer in order (the OpenAI API always sends it).
        std::size_t index = i;
        if (const auto it = item.find("index"); it != item.end()) {
            if (!it->is_number_unsigned() || it->get<std::uint64_t>() >= count) {
                return malformed(where + ".index is not an integer from 0 to " +
                                 std::to_string(count - 1));
            }
            index = static_cast<std::size_t>(it->get<std::uint64_t>());
        }
        if (seen[index]) return malformed("index " + std::to_string(index) + " appears twice");
        seen[index] = true;
        const auto embedding = item.find("embedding");
        if (embedding == item.end() || !embedding->is_array() || embedding->empty()) {
            return malformed(where + ".embedding is not a non-empty array of numbers");
        }
        if (expected == 0) expected = embedding->size();
        if (embedding->size() != expected) {
            return malformed(where + ".embedding has " + std::to_string(embedding->size()) +
                             " numbers where " + std::to_string(expected) + " were expected");
        }
        auto& vector = vectors[index];
        vector.reserve(expected);
        for (const json& x : *embedding) {
            if (!x.is_number())
                return malformed(where + ".embedding holds a " + std::string(x.type_name()));
            const double value = x.get<double>();
            if (!std::isfinite(value))
                return malformed(where + ".embedding holds a non-finite number");
            vector.push_back(value);
        }
    }
    return vectors;
}

}  // namespace

OpenAiEmbedder::OpenAiEmbedder(OpenAiEmbedderOptions options)
    : options_(std::move(options)),
      client_(options_.base_url, "embeddings", options_.api_key, options_.http),
      dim_(options_.dim) {
    if (options_.batch_size == 0)
        throw std::invalid_argument("OpenAiEmbedder needs a batch size of at least 1");
}

base::Result<schema::EmbeddingsResponse> OpenAiEmbedder::embed(std::span<const std::string> texts,
                                                               const EmbedOptions& options) {
    schema::EmbeddingsResponse response;
    response.model = options_.model;
    response.vectors.reserve(texts.size());
    http::CallOptions call;
    call.deadline = options.deadline;
    call.cancelled = options.cancelled;

    std::uint32_t dim = dim_.load();
    for (std::size_t start = 0; start < texts.size(); start += options_.batch_size) {
        const std::size_t count = std::min(options_.batch_size, texts.size() - start);
        json input = json::array();
        for (std::size_t i = start; i < start + count; ++i) input.push_back(texts[i]);
        const json body{{"model", options_.model}, {"input", std::move(input)}};
        auto answer = client_.post_json(body, call);
        if (!answer) return std::move(answer).error();
        auto vectors = parse_batch(answer->body, count, dim, client_);
        if (!vectors) return std::move(vectors).error();
        if (dim == 0 && !vectors->empty())
            dim = static_cast<std::uint32_t>(vectors->front().size());
        for (auto& v : *vectors) response.vectors.push_back(std::move(v));
    }
    if (dim != 0) {
        // The first answer fixes the dimension for good: vectors of one index must agree.
        std::uint32_t unknown = 0;
        if (!dim_.compare_exchange_strong(unknown, dim) && unknown != dim) {
            return client_.malformed(std::to_string(dim) +
                                     " dimensions where earlier answers had " +
                                     std::to_string(unknown));
        }
    }
    response.dim = dim;
    return response;
}

}  // namespace glassbox::embeddings
