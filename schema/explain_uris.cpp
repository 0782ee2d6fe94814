// One-UUID-per-run URI builders for explain traces.
#include "schema/explain_uris.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <random>

#include "base/ascii.hpp"
#include "base/utf8.hpp"

namespace glassbox::schema::explain {
namespace {

constexpr std::string_view kUrnPrefix = "urn:glassbox:";
constexpr std::size_t kUuidLength = 36;

bool is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

std::optional<std::string> normalise_uuid(std::string_view text) {
    if (text.size() != kUuidLength) return std::nullopt;
    std::string out(text);
    for (std::size_t i = 0; i < out.size(); ++i) {
        const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? out[i] != '-' : !is_hex(out[i])) return std::nullopt;
        out[i] = base::ascii_lower(out[i]);
    }
    return out;
}

constexpr std::string_view kIriForbidden = "<>\"{}|^`\\";

// Per byte: 1 forbidden in an IRI, 2 not ASCII (the UTF-8 check decides), 0 allowed. A table,
// as every IRI of every stored explain message passes through here.
constexpr std::array<std::uint8_t, 256> kIriByteClass = [] {
    std::array<std::uint8_t, 256> table{};
    for (std::size_t c = 0; c <= 0x20; ++c) table[c] = 1;
    table[0x7F] = 1;
    for (char c : kIriForbidden) table[static_cast<unsigned char>(c)] = 1;
    for (std::size_t c = 0x80; c < 256; ++c) table[c] = 2;
    return table;
}();

bool forbidden_in_iri(unsigned char c) { return kIriByteClass[c] == 1; }

// RFC 3986 scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then ":". Its length, or 0.
std::size_t scheme_length(std::string_view iri) {
    const auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    if (iri.empty() || !alpha(iri[0])) return 0;
    for (std::size_t i = 1; i < iri.size(); ++i) {
        const char c = iri[i];
        if (c == ':') return i;
        if (!alpha(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.') return 0;
    }
    return 0;
}

std::string percent_encode(std::string_view text) {
    std::string out;
    for (char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '.' || c == '_' || c == '~' || c == '-') {
            out += ch;
        } else {
            std::array<char, 4> buf{};
            std::snprintf(buf.data(), buf.size(), "%%%02X", static_cast<unsigned>(c));
            out += buf.data();
        }
    }
    return out;
}

}  // namespace

RunUris::RunUris(std::string uuid)
    : uuid_(std::move(uuid)), prefix_(std::string(kUrnPrefix) + uuid_ + ":") {}

RunUris RunUris::generate() {
    // One generator per thread, seeded once from the OS: cheap per call, no shared state.
    thread_local std::mt19937_64 engine = [] {
        std::random_device device;
        std::seed_seq seed{device(), device(), device(), device()};
        return std::mt19937_64(seed);
    }();
    std::array<std::uint8_t, 16> bytes{};
    for (std::size_t i = 0; i < bytes.size(); i += 8) {
        const std::uint64_t word = engine();
        for (std::size_t j = 0; j < 8; ++j) {
            bytes[i + j] = static_cast<std::uint8_t>(word >> (8 * j));
        }
    }
    bytes[6] = static_cast<std::uint8_t>((bytes[6] & 0x0F) | 0x40);  // RFC 4122: version 4
    bytes[8] = static_cast<std::uint8_t>((bytes[8] & 0x3F) | 0x80);  // RFC 4122: variant 10
    std::string text;
    text.reserve(kUuidLength);
    constexpr std::string_view kHex = "0123456789abcdef";
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
        text += kHex[bytes[i] >> 4];
        text += kHex[bytes[i] & 0x0F];
    }
    return RunUris(std::move(text));
}

std::optional<RunUris> RunUris::from_uuid(std::string_view uuid) {
    auto normal = normalise_uuid(uuid);
    if (!normal) return std::nullopt;
    return RunUris(std::move(*normal));
}

std::optional<RunUris> RunUris::from_uri(std::string_view uri) {
    if (!uri.starts_with(kUrnPrefix)) return std::nullopt;
    uri.remove_prefix(kUrnPrefix.size());
    if (uri.size() <= kUuidLength || uri[kUuidLength] != ':') return std::nullopt;
    return from_uuid(uri.substr(0, kUuidLength));
}

bool RunUris::owns(std::string_view uri) const noexcept { return uri.starts_with(prefix_); }

bool RunUris::is_selection(std::string_view uri) const noexcept {
    if (!owns(uri)) return false;
    uri.remove_prefix(prefix_.size());
    for (std::string_view kind : {"focus:edge:", "exploration:chunk:", "focus:chunk:"}) {
        if (uri.starts_with(kind) && uri.size() > kind.size()) {
            for (char c : uri.substr(kind.size())) {
                if (c < '0' || c > '9') return false;
            }
            return true;
        }
    }
    return false;
}

std::string RunUris::at(std::string_view suffix) const {
    std::string out = prefix_;
    out += suffix;
    return out;
}

std::string RunUris::question() const { return at("question"); }
std::string RunUris::grounding() const { return at("grounding"); }
std::string RunUris::exploration() const { return at("exploration"); }
std::string RunUris::focus() const { return at("focus"); }
std::string RunUris::synthesis() const { return at("synthesis"); }
std::string RunUris::conclusion() const { return at("conclusion"); }
std::string RunUris::routing_decision() const { return at("routing"); }
std::string RunUris::escalation(std::size_t n) const {
    return at("escalation:" + std::to_string(n));
}
std::string RunUris::analysis(std::size_t n) const { return at("analysis:" + std::to_string(n)); }
std::string RunUris::observation(std::size_t n) const {
    return at("observation:" + std::to_string(n));
}
std::string RunUris::edge_selection(std::size_t n) const {
    return at("focus:edge:" + std::to_string(n));
}
std::string RunUris::explored_edge(std::size_t n) const {
    return at("exploration:edge:" + std::to_string(n));
}
std::string RunUris::retrieved_chunk(std::size_t n) const {
    return at("exploration:chunk:" + std::to_string(n));
}
std::string RunUris::ranked_chunk(std::size_t n) const {
    return at("focus:chunk:" + std::to_string(n));
}
std::string RunUris::citation(std::size_t n) const {
    return at("synthesis:citation:" + std::to_string(n));
}
std::string RunUris::evidence_feature(std::string_view step, std::size_t n) const {
    return at(std::string(step) + ":feature:" + std::to_string(n));
}
std::string RunUris::completeness(std::string_view step) const {
    return at(std::string(step) + ":completeness");
}
std::string RunUris::conflict(std::string_view step, std::size_t n) const {
    return at(std::string(step) + ":conflict:" + std::to_string(n));
}
std::string RunUris::text(std::string_view key) const { return at("text:" + percent_encode(key)); }
std::string RunUris::removed_fact(std::size_t n) const {
    return at("removed:" + std::to_string(n));
}

bool is_writable_iri(std::string_view iri) noexcept {
    std::uint8_t seen = 0;
    for (const char ch : iri) seen |= kIriByteClass[static_cast<unsigned char>(ch)];
    if (seen & 1) return false;
    if ((seen & 2) && base::find_invalid_utf8(iri)) return false;
    return scheme_length(iri) != 0;
}

std::optional<std::string> iri_problem(std::string_view iri) {
    if (is_writable_iri(iri)) return std::nullopt;  // the common case, without a second look
    if (const auto bad = base::find_invalid_utf8(iri))
        return "it is not well-formed UTF-8 (at byte " + std::to_string(*bad) + ")";
    for (std::size_t i = 0; i < iri.size(); ++i) {
        const auto c = static_cast<unsigned char>(iri[i]);
        if (!forbidden_in_iri(c)) continue;
        std::array<char, 16> shown{};
        if (c == ' ') {
            std::snprintf(shown.data(), shown.size(), "a space");
        } else if (c < 0x20 || c == 0x7F) {
            std::snprintf(shown.data(), shown.size(), "U+%04X", static_cast<unsigned>(c));
        } else {
            std::snprintf(shown.data(), shown.size(), "'%c'", static_cast<char>(c));
        }
        return std::string("it contains ") + shown.data() + " at byte " + std::to_string(i) +
               " (an IRI may not hold <>\"{}|^`\\, spaces or control characters)";
    }
    if (scheme_length(iri) == 0)
        return std::string("it is not an absolute IRI (it needs a scheme such as urn: or https:)");
    return std::nullopt;
}

std::string writable_iri(std::string_view iri) {
    if (is_writable_iri(iri)) return std::string(iri);
    const bool well_formed = !base::find_invalid_utf8(iri);
    std::string out = scheme_length(iri) == 0 ? "urn:glassbox:iri:" : "";
    for (char ch : iri) {
        const auto c = static_cast<unsigned char>(ch);
        // Bytes of a well-formed multi-byte character stay (an IRI holds Unicode); the rest of
        // what is not allowed is percent-encoded, '%' included, so the original can be read back.
        if (forbidden_in_iri(c) || c == '%' || (c >= 0x80 && !well_formed)) {
            std::array<char, 4> buf{};
            std::snprintf(buf.data(), buf.size(), "%%%02X", static_cast<unsigned>(c));
            out += buf.data();
        } else {
            out += ch;
        }
    }
    return out;
}

std::string worker_agent_uri(std::string_view service) {
    return "urn:glassbox:agent:worker:" + percent_encode(service);
}

std::string model_agent_uri(std::string_view model) {
    return "urn:glassbox:agent:model:" + percent_encode(model);
}

std::string user_agent_uri(std::string_view name) {
    return "urn:glassbox:agent:user:" + percent_encode(name);
}

}  // namespace glassbox::schema::explain
