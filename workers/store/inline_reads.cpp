// The store's quick reads, told apart by the top-level "op" of the body's text.
#include "workers/store/inline_reads.hpp"

#include <array>
#include <atomic>
#include <string>

#include "schema/json_cursor.hpp"
#include "workers/store/store_service.hpp"

namespace glassbox::store {
namespace {

// Indexed lookups bounded by the store's limits (store_bounds.hpp): rows, vectors and reply
// bytes per request.
constexpr std::array kQuickReads = {kOpTriplesBatch, kOpEntities,      kOpEntitiesBatch,
                                    kOpChunksVector, kOpChunksKeyword, kOpChunksHybrid,
                                    kOpChunksFetch,  kOpFactSources,   kOpLabels};

// Nesting skip() follows in the values before "op" (a few levels in any read request).
constexpr int kSkipDepth = 8;

// Requests of this process that are not quick reads, running or waiting for a lock now.
std::atomic<int> g_long_requests{0};

}  // namespace

LongRequest::LongRequest(std::string_view body) noexcept : counted_(!is_quick_read(body)) {
    if (counted_) g_long_requests.fetch_add(1, std::memory_order_relaxed);
}

LongRequest::~LongRequest() {
    if (counted_) g_long_requests.fetch_sub(1, std::memory_order_relaxed);
}

bool runs_inline(std::string_view /*meta*/, std::string_view body) noexcept {
    return g_long_requests.load(std::memory_order_relaxed) == 0 && is_quick_read(body);
}

bool is_quick_read(std::string_view body) noexcept {
    if (body.size() > kInlineBodyMax) return false;
    try {
        // The top-level keys in order, each value skipped, until "op" (nlohmann writes keys
        // sorted: a read's "collection", maybe its limits, come first). An "op" nested in an
        // earlier value is skipped with it, never taken for the request's.
        schema::JsonCursor cursor(body, kSkipDepth);
        std::string op;
        bool found = false;
        (void)cursor.object([&](std::string_view key) {
            if (key != "op") return cursor.skip();
            found = cursor.string(op);
            return false;  // stop here: the rest is the handler's to read and check
        });
        if (!found) return false;
        // nlohmann keeps the last of two "op" keys, and an escaped key may spell "op": a body
        // with either after this one (or anything that looks like it) is left to the thread.
        const auto rest = body.substr(static_cast<std::size_t>(cursor.position() - body.data()));
        if (rest.find("\"op\"") != std::string_view::npos ||
            rest.find("\\u") != std::string_view::npos)
            return false;
        for (const auto quick : kQuickReads) {
            if (op == quick) return true;
        }
        return false;
    } catch (...) {
        return false;  // an allocation that failed: the handler thread, as without the hook
    }
}

}  // namespace glassbox::store
