// The explain body scanner: a validating JSON reader led by the explain message's schema. It
// builds no tree and decides only "this is the canonical form" or "ask the DOM decoder".
#include "workers/trace_collector/explain_scan.hpp"

#include <limits>

#include "base/utf8.hpp"
#include "schema/explain_uris.hpp"
#include "schema/term.hpp"
#include "schema/term_json.hpp"
#include "schema/untrusted_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::trace {
namespace {

using base::append_utf8;
using base::hex4;

// Nesting allowed inside fields the decoder ignores; deeper values go to the DOM decoder,
// which refuses text deeper than schema::kMaxJsonDepth with its typed error. The scanner's
// recursion (skip_value, scan_term) is bounded by this and kMaxQuotedTripleDepth, not by the text.
constexpr int kMaxSkipDepth = 32;
static_assert(static_cast<std::size_t>(kMaxSkipDepth) + 2 <= schema::kMaxJsonDepth);

// Applies the escapes of a string the scanner accepted (so every escape is well formed).
std::string unescape(std::string_view raw) {
    std::string out;
    out.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size();) {
        if (raw[i] != '\\') {
            out += raw[i++];
            continue;
        }
        const char e = raw[i + 1];
        i += 2;
        switch (e) {
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'u': {
                auto cp = static_cast<std::uint32_t>(hex4(raw.data() + i));
                i += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    const auto low = static_cast<std::uint32_t>(hex4(raw.data() + i + 2));
                    i += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                }
                append_utf8(out, cp);
                break;
            }
            default:
                out += e;
                break;  // '"', '\\', '/'
        }
    }
    return out;
}

// Reads JSON (RFC 8259, as nlohmann's parser accepts it) from a body without building values.
// Every reader returns false on anything it does not accept; the scan then gives up.
class Scanner {
public:
    explicit Scanner(std::string_view text) : at_(text.data()), end_(text.data() + text.size()) {}

    const char* position() const noexcept { return at_; }

    void skip_ws() noexcept {
        while (at_ != end_ && (*at_ == ' ' || *at_ == '\n' || *at_ == '\r' || *at_ == '\t')) ++at_;
    }
    // Skips whitespace, then consumes `c` if it comes next.
    bool take(char c) noexcept {
        skip_ws();
        if (at_ == end_ || *at_ != c) return false;
        ++at_;
        return true;
    }
    bool at_end() noexcept {
        skip_ws();
        return at_ == end_;
    }

    bool string(JsonText& out) {
        if (!take('"')) return false;
        const char* start = at_;
        bool escaped = false;
        while (true) {
            if (at_ == end_) return false;
            const auto c = static_cast<unsigned char>(*at_);
            if (c == '"') break;
            if (c == '\\') {
                escaped = true;
                if (!escape()) return false;
            } else if (c < 0x20) {
                return false;
            } else if (c < 0x80) {
                ++at_;
            } else if (!utf8()) {
                return false;
            }
        }
        out.raw = std::string_view(start, static_cast<std::size_t>(at_ - start));
        out.escaped = escaped;
        ++at_;
        return true;
    }
    // As string(), and `token` is the string with its quotes, as it stands in the body.
    bool string_token(JsonText& out, std::string_view& token) {
        skip_ws();
        const char* start = at_;
        if (!string(out)) return false;
        token = std::string_view(start, static_cast<std::size_t>(at_ - start));
        return true;
    }

    // A JSON integer that fits std::uint64_t (what the decoder reads as unsigned).
    bool unsigned_integer(std::uint64_t& out) {
        skip_ws();
        if (at_ == end_ || *at_ < '0' || *at_ > '9') return false;
        std::uint64_t value = 0;
        if (*at_ == '0') {
            ++at_;
        } else {
            while (at_ != end_ && *at_ >= '0' && *at_ <= '9') {
                const auto digit = static_cast<std::uint64_t>(*at_ - '0');
                if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return false;
                value = value * 10 + digit;
                ++at_;
            }
        }
        // A fraction or exponent makes a JSON float (not an integer to the decoder); "01" is
        // not JSON.
        if (at_ != end_ &&
            (*at_ == '.' || *at_ == 'e' || *at_ == 'E' || (*at_ >= '0' && *at_ <= '9'))) {
            return false;
        }
        out = value;
        return true;
    }

    bool boolean(bool& out) {
        skip_ws();
        if (word("true")) {
            out = true;
            return true;
        }
        if (word("false")) {
            out = false;
            return true;
        }
        return false;
    }

    // {"key": value, ...}: `on_key(key)` reads each value.
    template <typename OnKey>
    bool object(OnKey&& on_key) {
        if (!take('{')) return false;
        if (take('}')) return true;
        do {
            JsonText key;
            if (!string(key) || !take(':')) return false;
            if (!on_key(key)) return false;
        } while (take(','));
        return take('}');
    }

    // [value, ...]: `on_item()` reads each value.
    template <typename OnItem>
    bool array(OnItem&& on_item) {
        if (!take('[')) return false;
        if (take(']')) return true;
        do {
            if (!on_item()) return false;
        } while (take(','));
        return take(']');
    }

    // Any JSON value, checked and ignored.
    bool skip_value(int depth) {
        if (depth > kMaxSkipDepth) return false;
        skip_ws();
        if (at_ == end_) return false;
        switch (*at_) {
            case '"': {
                JsonText ignored;
                return string(ignored);
            }
            case '{':
                return object([&](const JsonText&) { return skip_value(depth + 1); });
            case '[':
                return array([&] { return skip_value(depth + 1); });
            case 't':
                return word("true");
            case 'f':
                return word("false");
            case 'n':
                return word("null");
            default:
                return number();
        }
    }

private:
    bool word(std::string_view w) noexcept {
        if (static_cast<std::size_t>(end_ - at_) < w.size() || std::string_view(at_, w.size()) != w)
            return false;
        at_ += w.size();
        return true;
    }

    // -?(0|[1-9][0-9]*)(.[0-9]+)?; an exponent is left to the DOM decoder (its range handling
    // is nlohmann's business).
    bool number() noexcept {
        const auto digit = [&] { return at_ != end_ && *at_ >= '0' && *at_ <= '9'; };
        if (at_ != end_ && *at_ == '-') ++at_;
        if (!digit()) return false;
        if (*at_ == '0') {
            ++at_;
        } else {
            while (digit()) ++at_;
        }
        if (at_ != end_ && *at_ == '.') {
            ++at_;
            if (!digit()) return false;
            while (digit()) ++at_;
        }
        return at_ == end_ || (*at_ != 'e' && *at_ != 'E' && *at_ != '.' && !digit());
    }

    // At a backslash: one escape; \u surrogates must pair up (as nlohmann requires).
    bool escape() noexcept {
        if (end_ - at_ < 2) return false;
        switch (at_[1]) {
            case '"':
            case '\\':
            case '/':
            case 'b':
            case 'f':
            case 'n':
            case 'r':
            case 't':
                at_ += 2;
                return true;
            case 'u': {
                if (end_ - at_ < 6) return false;
                const int unit = hex4(at_ + 2);
                if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF)) return false;
                at_ += 6;
                if (unit >= 0xD800 && unit <= 0xDBFF) {
                    if (end_ - at_ < 6 || at_[0] != '\\' || at_[1] != 'u') return false;
                    const int low = hex4(at_ + 2);
                    if (low < 0xDC00 || low > 0xDFFF) return false;
                    at_ += 6;
                }
                return true;
            }
            default:
                return false;
        }
    }

    // At a byte >= 0x80: one well-formed UTF-8 sequence (RFC 3629: no overlong forms, no
    // surrogates, nothing above U+10FFFF).
    bool utf8() noexcept {
        const auto byte = [&](std::ptrdiff_t i) { return static_cast<unsigned char>(at_[i]); };
        const unsigned char lead = byte(0);
        std::ptrdiff_t length = 0;
        unsigned char low = 0x80;
        unsigned char high = 0xBF;
        if (lead >= 0xC2 && lead <= 0xDF) {
            length = 2;
        } else if (lead == 0xE0) {
            length = 3;
            low = 0xA0;
        } else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) {
            length = 3;
        } else if (lead == 0xED) {
            length = 3;
            high = 0x9F;
        } else if (lead == 0xF0) {
            length = 4;
            low = 0x90;
        } else if (lead >= 0xF1 && lead <= 0xF3) {
            length = 4;
        } else if (lead == 0xF4) {
            length = 4;
            high = 0x8F;
        } else {
            return false;
        }
        if (end_ - at_ < length) return false;
        if (byte(1) < low || byte(1) > high) return false;
        for (std::ptrdiff_t i = 2; i < length; ++i) {
            if (byte(i) < 0x80 || byte(i) > 0xBF) return false;
        }
        at_ += length;
        return true;
    }

    const char* at_;
    const char* end_;
};

// Bit flags of the keys an object has shown; a key seen twice is refused (nlohmann keeps the
// last, the scan does not try to).
class Keys {
public:
    bool first(unsigned bit) noexcept {
        if ((seen_ & bit) != 0) return false;
        seen_ |= bit;
        return true;
    }
    unsigned seen() const noexcept { return seen_; }

private:
    unsigned seen_ = 0;
};

bool scan_triple(Scanner& in, ScannedTriple& triple, int depth, bool quoted);

// True when `text` (an IRI-valued string) is one the decoder keeps as it is: empty, or an IRI
// explain::iri_problem accepts. Any other IRI the decoder rewrites, so the scan gives up.
bool writable(const JsonText& text) {
    if (text.raw.empty()) return true;
    std::string scratch;
    return schema::explain::is_writable_iri(text.value(scratch));
}

// One term in the canonical encoding (schema::encode of what decode_term gives): exactly
// {"t":"i","i":IRI≠""} | {"t":"b","d":id} | {"t":"l","v":value[,"dt":IRI≠"",≠xsd:string]
// [,"ln":tag≠""]} (not both) | {"t":"t","tr":{s,p,o}}. `value_token`, if given, receives a
// literal's "v" token.
bool scan_term(Scanner& in, ScannedTerm& term, int depth, std::string_view* value_token) {
    enum : unsigned { kT = 1, kI = 2, kD = 4, kV = 8, kDt = 16, kLn = 32, kTr = 64 };
    JsonText t, i, d, v, dt, ln;
    std::string_view v_token;
    Keys keys;
    const bool ok = in.object([&](const JsonText& key) -> bool {
        if (key.escaped) return false;
        const std::string_view k = key.raw;
        if (k == "t") return keys.first(kT) && in.string(t);
        if (k == "i") return keys.first(kI) && in.string(i);
        if (k == "v") return keys.first(kV) && in.string_token(v, v_token);
        if (k == "d") return keys.first(kD) && in.string(d);
        if (k == "dt") return keys.first(kDt) && in.string(dt);
        if (k == "ln") return keys.first(kLn) && in.string(ln);
        if (k == "tr") {
            // The decoder's bound on quoted triples, counted the same way.
            if (!keys.first(kTr) || depth >= schema::kMaxQuotedTripleDepth) return false;
            ScannedTriple inner;
            return scan_triple(in, inner, depth + 1, true);
        }
        return false;
    });
    if (!ok || (keys.seen() & kT) == 0 || t.escaped || t.raw.size() != 1) return false;
    const unsigned seen = keys.seen();
    switch (t.raw[0]) {
        case 'i':
            if (seen != (kT | kI) || i.raw.empty() || !writable(i)) return false;
            term = ScannedTerm{ScannedKind::kIri, i};
            return true;
        case 'b':
            if (seen != (kT | kD)) return false;
            term = ScannedTerm{ScannedKind::kBlankNode, d};
            return true;
        case 'l': {
            if ((seen & ~(kDt | kLn)) != (kT | kV) || (seen & (kDt | kLn)) == (kDt | kLn))
                return false;
            if ((seen & kDt) != 0) {
                std::string scratch;
                if (dt.raw.empty() || dt.value(scratch) == schema::kXsdString || !writable(dt))
                    return false;
            }
            if ((seen & kLn) != 0 && ln.raw.empty()) return false;
            term = ScannedTerm{ScannedKind::kLiteral, v};
            if (value_token != nullptr) *value_token = v_token;
            return true;
        }
        case 't':
            if (seen != (kT | kTr)) return false;
            term = ScannedTerm{ScannedKind::kTriple, {}};
            return true;
        default:
            return false;
    }
}

// One triple in the canonical encoding: exactly "s", "p", "o" and, unless quoted, a non-empty
// "g" (schema::encode writes no graph inside a quoted triple and none for the default graph).
bool scan_triple(Scanner& in, ScannedTriple& triple, int depth, bool quoted) {
    enum : unsigned { kS = 1, kP = 2, kO = 4, kG = 8 };
    in.skip_ws();
    const char* start = in.position();
    std::string_view value_token;
    Keys keys;
    const bool ok = in.object([&](const JsonText& key) -> bool {
        if (key.escaped || key.raw.size() != 1) return false;
        switch (key.raw[0]) {
            case 's':
                return keys.first(kS) && scan_term(in, triple.s, depth, nullptr);
            case 'p':
                return keys.first(kP) && scan_term(in, triple.p, depth, nullptr);
            case 'o':
                return keys.first(kO) && scan_term(in, triple.o, depth, &value_token);
            case 'g': {
                JsonText graph;
                return !quoted && keys.first(kG) && in.string(graph) && !graph.raw.empty() &&
                       writable(graph);
            }
            default:
                return false;
        }
    });
    if (!ok || (keys.seen() & (kS | kP | kO)) != (kS | kP | kO)) return false;
    triple.has_graph = (keys.seen() & kG) != 0;
    triple.text = std::string_view(start, static_cast<std::size_t>(in.position() - start));
    if (triple.o.kind == ScannedKind::kLiteral) {
        triple.object_value_at = static_cast<std::size_t>(value_token.data() - start);
        triple.object_value_size = value_token.size();
    }
    return true;
}

// {"type": ErrorType name, "message": text}, other keys ignored (decode_error_at).
bool scan_error(Scanner& in, std::optional<base::Error>& out) {
    enum : unsigned { kType = 1, kMessage = 2 };
    base::Error error;
    Keys keys;
    const bool ok = in.object([&](const JsonText& key) -> bool {
        if (key.escaped) return false;
        if (key.raw == "type") {
            JsonText type;
            if (!keys.first(kType) || !in.string(type) || type.escaped) return false;
            if (type.raw.empty()) return true;
            const auto parsed = base::error_type_from_string(type.raw);
            if (!parsed) return false;
            error.type = *parsed;
            return true;
        }
        if (key.raw == "message") {
            JsonText message;
            if (!keys.first(kMessage) || !in.string(message)) return false;
            error.message = message.str();
            return true;
        }
        return in.skip_value(2);
    });
    if (!ok) return false;
    out = std::move(error);
    return true;
}

const std::string& default_graph_token() {
    // kRetrievalGraph holds nothing JSON escapes.
    static const std::string token = "\"" + std::string(schema::vocab::kRetrievalGraph) + "\"";
    return token;
}

}  // namespace

std::string_view JsonText::value(std::string& scratch) const {
    if (!escaped) return raw;
    scratch = unescape(raw);
    return scratch;
}

std::string JsonText::str() const { return escaped ? unescape(raw) : std::string(raw); }

bool scan_explain(std::string_view body, ScannedExplain& out) {
    out.session.clear();
    out.seq = 0;
    out.service.clear();
    out.worker.clear();
    out.parent_uri.reset();
    out.explain_id.clear();
    out.explain_graph_token = default_graph_token();
    out.triples.clear();
    out.end_of_trace = false;
    out.trace_status = schema::TraceStatus::kNone;
    out.error.reset();

    enum : unsigned {
        kMessageType = 1 << 0,
        kSession = 1 << 1,
        kSeq = 1 << 2,
        kService = 1 << 3,
        kWorker = 1 << 4,
        kParent = 1 << 5,
        kExplainId = 1 << 6,
        kGraph = 1 << 7,
        kTriples = 1 << 8,
        kEnd = 1 << 9,
        kStatus = 1 << 10,
        kError = 1 << 11,
    };
    Scanner in(body);
    Keys keys;
    const auto text_field = [&](unsigned bit, std::string& field) {
        JsonText value;
        if (!keys.first(bit) || !in.string(value)) return false;
        field = value.str();
        return true;
    };
    const auto iri_field = [&](unsigned bit, std::string& field) {
        return text_field(bit, field) && (field.empty() || schema::explain::is_writable_iri(field));
    };
    const bool ok = in.object([&](const JsonText& key) -> bool {
        // An escaped key may spell a field name: left to the decoder.
        if (key.escaped) return false;
        const std::string_view k = key.raw;
        if (k == "explain_triples") {
            if (!keys.first(kTriples)) return false;
            return in.array([&] { return scan_triple(in, out.triples.emplace_back(), 0, false); });
        }
        if (k == "session") return iri_field(kSession, out.session);
        if (k == "seq") return keys.first(kSeq) && in.unsigned_integer(out.seq);
        if (k == "service") return text_field(kService, out.service);
        if (k == "worker") return text_field(kWorker, out.worker);
        if (k == "explain_id") return iri_field(kExplainId, out.explain_id);
        if (k == "explain_graph") {
            JsonText graph;
            return keys.first(kGraph) && in.string_token(graph, out.explain_graph_token) &&
                   writable(graph);
        }
        if (k == "parent_uri") {
            std::string parent;
            if (!iri_field(kParent, parent)) return false;
            out.parent_uri = std::move(parent);
            return true;
        }
        if (k == "message_type") {
            JsonText type;
            return keys.first(kMessageType) && in.string(type) && !type.escaped &&
                   type.raw == "explain";
        }
        if (k == "end_of_trace") return keys.first(kEnd) && in.boolean(out.end_of_trace);
        if (k == "trace_status") {
            JsonText status;
            if (!keys.first(kStatus) || !in.string(status) || status.escaped) return false;
            const auto parsed = schema::trace_status_from_string(status.raw);
            if (!parsed) return false;
            out.trace_status = *parsed;
            return true;
        }
        if (k == "error") return keys.first(kError) && scan_error(in, out.error);
        return in.skip_value(1);  // a field the decoder does not read
    });
    return ok && in.at_end();
}

}  // namespace glassbox::trace
