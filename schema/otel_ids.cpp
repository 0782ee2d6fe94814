// OpenTelemetry ids of glassbox runs: derived from run UUIDs and step IRIs.
#include "schema/otel_ids.hpp"

#include <cstdint>

#include "base/fnv.hpp"
#include "schema/explain_uris.hpp"

namespace glassbox::schema::otel {

namespace {

constexpr char kHex[] = "0123456789abcdef";

bool is_lower_hex(char c) noexcept { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

}  // namespace

std::optional<std::string> trace_id_of(std::string_view run_uri) {
    const auto run = explain::RunUris::from_uri(run_uri);
    if (!run) return std::nullopt;
    std::string id;
    id.reserve(32);
    for (const char c : run->uuid()) {
        if (c != '-') id += c;
    }
    if (!valid_trace_id(id)) return std::nullopt;
    return id;
}

std::string span_id_of(std::string_view iri) {
    std::uint64_t hash = base::fnv1a64(iri);
    // W3C trace context: an all-zero span id is invalid.
    if (hash == 0) hash = base::kFnvOffset;
    std::string id(16, '0');
    for (int i = 15; i >= 0; --i) {
        id[static_cast<std::size_t>(i)] = kHex[hash & 0xfu];
        hash >>= 4;
    }
    return id;
}

bool valid_trace_id(std::string_view id) noexcept {
    if (id.size() != 32) return false;
    bool nonzero = false;
    for (const char c : id) {
        if (!is_lower_hex(c)) return false;
        nonzero = nonzero || c != '0';
    }
    return nonzero;
}

}  // namespace glassbox::schema::otel
