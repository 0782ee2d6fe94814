// Text helpers shared by the trace renderers, and the public safe_text / format_duration.
#include "cli/render/render_text.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "cli/render/trace_render.hpp"
#include "schema/term_json.hpp"

namespace glassbox::cli::render {
namespace detail {

using nlohmann::json;
using schema::Term;
using schema::Triple;
namespace vocab = schema::vocab;

// Control characters (C0, DEL, C1) become visible escapes: stored texts never reach the terminal
// raw.
std::string escape_controls(std::string_view text, bool keep_newlines) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '\n' && keep_newlines) {
            out += '\n';
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += keep_newlines ? "\t" : "\\t";
        } else if (c < 0x20 || c == 0x7F) {
            std::array<char, 8> buf{};
            std::snprintf(buf.data(), buf.size(), "\\x%02X", static_cast<unsigned>(c));
            out += buf.data();
        } else if (c == 0xC2 && i + 1 < text.size() &&
                   static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                   static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
            std::array<char, 10> buf{};
            std::snprintf(buf.data(), buf.size(), "\\u%04X",
                          static_cast<unsigned>(static_cast<unsigned char>(text[i + 1])));
            out += buf.data();
            ++i;
        } else {
            out += text[i];
        }
    }
    return out;
}

// Byte offset of code point `n` of UTF-8 `text` (text.size() when past the end).
std::size_t code_point_offset(std::string_view text, std::uint64_t n) {
    std::size_t i = 0;
    for (std::uint64_t seen = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
            if (seen == n) return i;
            ++seen;
        }
    }
    return text.size();
}

std::size_t code_points(std::string_view text) {
    std::size_t count = 0;
    for (char c : text) {
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++count;
    }
    return count;
}

// At most `width` code points, the last one an ellipsis when cut.
std::string truncate_text(std::string_view text, std::size_t width) {
    if (code_points(text) <= width) return std::string(text);
    return std::string(text.substr(0, code_point_offset(text, width - 1))) + "\u2026";
}

std::string cut_at_word(std::string_view text, std::size_t width) {
    if (code_points(text) <= width) return std::string(text);
    if (width == 0) return {};
    std::string_view kept = text.substr(0, code_point_offset(text, width - 1));
    // A space in the second half of the room: cut there, not inside a word.
    const auto space = kept.find_last_of(' ');
    if (space != std::string_view::npos && code_points(kept.substr(0, space)) >= width / 2)
        kept = kept.substr(0, space);
    while (!kept.empty() && std::string_view(" ,;:-").find(kept.back()) != std::string_view::npos)
        kept.remove_suffix(1);
    return std::string(kept) + "\u2026";
}

std::string single_line(std::string_view text) {
    std::string out;
    bool space = false;
    for (char c : text) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            space = !out.empty();
            continue;
        }
        if (space) out += ' ';
        space = false;
        out += c;
    }
    return out;
}

std::string pad(std::string_view text, std::size_t width) {
    std::string out(text);
    const std::size_t length = code_points(text);
    if (length < width) out.append(width - length, ' ');
    return out;
}

namespace {

// A conservative subset of Turtle's PN_LOCAL: letters, digits, '_' and '-', not starting with '-'
// or a digit.
}  // namespace

std::string_view local_name(std::string_view iri, std::string_view ns) {
    return iri.size() > ns.size() && iri.substr(0, ns.size()) == ns ? iri.substr(ns.size())
                                                                    : std::string_view{};
}

void StepTypeLabel::add(std::string_view type_iri) {
    if (auto local = local_name(type_iri, schema::vocab::kGbNs); !local.empty()) {
        gb_ += (gb_.empty() ? "" : "+") + std::string(local);
    } else if (auto prov_local = local_name(type_iri, schema::vocab::kProvNs);
               !prov_local.empty() && prov_.empty()) {
        prov_ = std::string(prov_local);
    }
}

std::string StepTypeLabel::label(std::string_view untyped) const {
    if (!gb_.empty()) return escape_controls(gb_, false);
    if (!prov_.empty()) return escape_controls(prov_, false);
    return std::string(untyped);
}

bool is_integer_lexical(std::string_view text) {
    std::size_t i = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
    if (i >= text.size()) return false;
    return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(i), text.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
}

std::string call_cost(const schema::StepCost& call) {
    std::string text = "tokens " + std::to_string(call.input_tokens) + " in / " +
                       std::to_string(call.output_tokens) + " out, ";
    if (!call.cost) return text + "no price for " + call.model;
    return text + "cost " + format_cost(call.cost) + " " + call.currency;
}

std::string kind_of(const schema::TraceSessionSummary& s) {
    if (s.kind && !s.kind->empty()) return *s.kind;
    return s.service.value_or("");
}

std::string session_label(const std::string& session) {
    // urn:glassbox:<uuid>:question → <uuid>, which `show` accepts (any unique prefix of it).
    constexpr std::string_view kPrefix = "urn:glassbox:";
    constexpr std::string_view kSuffix = ":question";
    if (session.size() == kPrefix.size() + 36 + kSuffix.size() && session.rfind(kPrefix, 0) == 0 &&
        session.compare(session.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0) {
        return session.substr(kPrefix.size(), 36);
    }
    return session;
}

std::string body_string(const json& body, const char* key) {
    if (!body.is_object()) return {};
    const auto it = body.find(key);
    return it != body.end() && it->is_string() ? it->get<std::string>() : std::string{};
}
std::size_t triple_count(const json& body) {
    if (!body.is_object()) return 0;
    const auto it = body.find("explain_triples");
    return it != body.end() && it->is_array() ? it->size() : 0;
}

}  // namespace detail

std::string safe_text(std::string_view text, bool keep_newlines) {
    return detail::escape_controls(text, keep_newlines);
}

std::string format_cost(std::optional<double> cost) {
    if (!cost || !std::isfinite(*cost) || *cost < 0) return "-";
    if (*cost == 0) return "0";
    // Digits after the point: 2 from 1 up, else enough for 3 significant ones (at most 10).
    const int decimals =
        *cost >= 1 ? 2 : std::min(10, 2 - static_cast<int>(std::floor(std::log10(*cost))));
    std::array<char, 64> buf{};
    std::snprintf(buf.data(), buf.size(), "%.*f", decimals, *cost);
    std::string text = buf.data();
    if (text.find('.') != std::string::npos) {
        while (text.back() == '0') text.pop_back();
        if (text.back() == '.') text.pop_back();
    }
    return text == "0" ? "~0" : text;  // below 10^-10
}

std::string format_duration(std::optional<std::int64_t> duration_ms) {
    if (!duration_ms || *duration_ms < 0) return "-";
    const std::int64_t ms = *duration_ms;
    std::array<char, 48> buf{};
    if (ms < 1000) {
        std::snprintf(buf.data(), buf.size(), "%lld ms", static_cast<long long>(ms));
    } else if (ms < 60'000) {
        std::snprintf(buf.data(), buf.size(), "%.2f s", static_cast<double>(ms) / 1000.0);
    } else if (ms < 3'600'000) {
        std::snprintf(buf.data(), buf.size(), "%lld min %lld s",
                      static_cast<long long>(ms / 60'000), static_cast<long long>(ms / 1000 % 60));
    } else {
        std::snprintf(buf.data(), buf.size(), "%lld h %lld min",
                      static_cast<long long>(ms / 3'600'000),
                      static_cast<long long>(ms / 60'000 % 60));
    }
    return buf.data();
}

}  // namespace glassbox::cli::render
