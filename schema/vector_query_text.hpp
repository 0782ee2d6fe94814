// A vector query's body (the store's entities and entities-batch) read from its text in one pass,
// its vectors into one flat buffer of doubles: graph RAG sends one per question, ~2,700 numbers
// that a JSON tree would hold one allocation each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::schema {

// A GraphEmbeddingsQuery and its body's "op", as read_vector_query reads them. The buffers keep
// their capacity from one read to the next: a worker thread reuses one.
struct VectorQueryText {
    std::string op;
    std::string collection;
    std::uint32_t limit = 0;
    std::vector<double> values;     // every vector's components, one vector after another
    std::vector<std::size_t> ends;  // vector i is values[ends[i - 1] (0 for i = 0), ends[i])

    std::size_t size() const noexcept { return ends.size(); }
    std::span<const double> vector(std::size_t i) const noexcept {
        const std::size_t begin = i == 0 ? 0 : ends[i - 1];
        return std::span<const double>(values).subspan(begin, ends[i] - begin);
    }
};

// Reads `text` into `out` (cleared first, its capacity kept). True: `text` is a JSON object that
// decode<GraphEmbeddingsQuery> of its parsed tree reads as the same query (each component the
// same double, bit for bit; unknown keys skipped), with "op" a string. False for anything else:
// a null or a type the tree decoder would refuse or convert, a duplicate or escaped key, a
// number the cursor leaves to nlohmann ("-0", beyond double's range), text that is not JSON.
// The caller then parses the text as a tree, which gives the result or the error.
bool read_vector_query(std::string_view text, VectorQueryText& out);

}  // namespace glassbox::schema
