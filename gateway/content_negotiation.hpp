// Content negotiation by Accept (RFC 9110 §12.5.1): which of the media types a route can answer
// with the client prefers. Pure (no HTTP), so the reading of the header is unit-tested.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace glassbox::gateway {

// One media range of an Accept header, or one media type a route serves.
struct MediaRange {
    std::string type;     // lower-case; "*" for any
    std::string subtype;  // lower-case; "*" for any
    // Its parameters but the weight, in order: names lower-case, values unquoted.
    std::vector<std::pair<std::string, std::string>> parameters;
    int weight = 1000;  // q in thousandths: 0 (not acceptable) to 1000
};

// `text` ("type/subtype" with parameters, and for a range of Accept a weight `q` after which
// everything is ignored) read as a media range; nullopt when it is not one. Names are
// case-insensitive; a q of 0 in any spelling (0, 0.0, 0.000) is 0; a positive q never rounds
// down to 0. Lenient as most servers are: a lone "*" is "*/*" (Java's default Accept sends one),
// and a q may drop its leading 0 (q=.5).
std::optional<MediaRange> parse_media_range(std::string_view text);

// The media ranges of an Accept field value, in order; an element that is no media range (or
// has a q outside 0..1) is left out.
std::vector<MediaRange> parse_accept(std::string_view accept);

// The index in `offered` (the media types a route can answer with, each "type/subtype" with
// its parameters, in the route's order of preference) of the one `accept` prefers; nullopt
// when it accepts none of them. An offered type takes its weight from the most specific range
// that matches it (type/subtype over type/* over */*, more parameters over fewer); the highest
// weight wins, then the more specific range, then the route's order. A range's parameters must
// all be the type's, but `charset`, which every answer meets as UTF-8. An empty Accept, or one
// with no media range in it, accepts anything: the route's first type.
std::optional<std::size_t> preferred_media_type(std::string_view accept,
                                                std::span<const std::string_view> offered);

}  // namespace glassbox::gateway
