// The vector query's one-pass reader, on the project's JSON cursor.
#include "schema/vector_query_text.hpp"

#include <limits>

#include "schema/json_cursor.hpp"

namespace glassbox::schema {
namespace {

// [[n, ...], ...] appended to out.values, each vector's end to out.ends. The cursor's real()
// gives what the tree's get<double>() gives: both round the decimal text correctly.
bool read_flat_vectors(JsonCursor& r, VectorQueryText& out) {
    return r.array([&] {
        const bool read = r.array([&] { return r.real(out.values.emplace_back()); });
        out.ends.push_back(out.values.size());
        return read;
    });
}

}  // namespace

bool read_vector_query(std::string_view text, VectorQueryText& out) {
    out.op.clear();
    out.collection.clear();
    out.limit = 0;
    out.values.clear();
    out.ends.clear();
    enum : unsigned { kVectors = 1, kOp = 2, kCollection = 4, kLimit = 8 };
    JsonKeys keys;
    JsonCursor r(text);
    const bool read = r.object([&](std::string_view key) {
        if (key == "vectors") return keys.first(kVectors) && read_flat_vectors(r, out);
        if (key == "op") return keys.first(kOp) && r.string(out.op);
        if (key == "collection") return keys.first(kCollection) && r.string(out.collection);
        if (key == "limit") {
            std::uint64_t limit = 0;
            if (!keys.first(kLimit) || !r.uint(limit) ||
                limit > std::numeric_limits<std::uint32_t>::max()) {
                return false;
            }
            out.limit = static_cast<std::uint32_t>(limit);
            return true;
        }
        return r.skip();
    });
    return read && r.at_end() && (keys.seen() & kOp) != 0;
}

}  // namespace glassbox::schema
