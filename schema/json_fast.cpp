// Tree-free writers and single-pass readers for the triple-carrying messages; see the header
// for how they are tied to the tree-based codecs.
#include "schema/json_fast.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/json_string.hpp"
#include "base/utf8.hpp"

namespace glassbox::schema {
namespace {

// ---- writing ------------------------------------------------------------------------------

void append_uint(std::string& out, std::uint64_t value) {
    char buffer[24];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, end);
}

// A double as dump() writes it: nlohmann's own shortest round-trip digits, null when not finite.
void append_double(std::string& out, double value) {
    if (!std::isfinite(value)) {
        out += "null";
        return;
    }
    char buffer[64];
    char* end = nlohmann::detail::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, static_cast<std::size_t>(end - buffer));
}

// `[item, item, ...]`, each written by `write(out, item)`.
template <typename Items, typename Write>
void append_array(std::string& out, const Items& items, Write&& write) {
    out += '[';
    bool first = true;
    for (const auto& item : items) {
        if (!first) out += ',';
        first = false;
        write(out, item);
    }
    out += ']';
}

// Writes one JSON object field by field. Callers give the keys in sorted order (dump()'s order,
// as nlohmann's objects are std::maps); keys are this file's own ASCII constants, so they are
// written unescaped.
class ObjectWriter {
public:
    explicit ObjectWriter(std::string& out) : out_(out) { out_ += '{'; }
    ~ObjectWriter() { out_ += '}'; }
    ObjectWriter(const ObjectWriter&) = delete;
    ObjectWriter& operator=(const ObjectWriter&) = delete;

    // Starts a field; the value is appended to the returned string.
    std::string& key(std::string_view key) {
        if (!first_) out_ += ',';
        first_ = false;
        out_ += '"';
        out_ += key;
        out_ += "\":";
        return out_;
    }
    void string(std::string_view key, std::string_view value);
    void boolean(std::string_view name, bool value) { key(name) += value ? "true" : "false"; }
    void uint(std::string_view name, std::uint64_t value) { append_uint(key(name), value); }
    void error(std::string_view name, const base::Error& e) {
        ObjectWriter nested(key(name));
        nested.string("message", e.message);
        nested.string("type", to_string(e.type));
    }

private:
    std::string& out_;
    bool first_ = true;
};

// ---- reading ------------------------------------------------------------------------------

// The values nested deeper than this are left to the slow path, which refuses text deeper than
// kMaxJsonDepth with its typed error. The fast path's recursion (skip, read_term) is bounded by
// these constants, never by the text; and nothing it accepts is refused by the slow path for its
// depth: a skipped value or a batch reply's triple quoting triples to the bound stay well within.
constexpr int kMaxSkipDepth = 64;
static_assert(static_cast<std::size_t>(kMaxSkipDepth) + 2 <= kMaxJsonDepth &&
              static_cast<std::size_t>(2 * kMaxQuotedTripleDepth) + 5 <= kMaxJsonDepth);

// A cursor over JSON text. Every method returns false for "not the expected well-formed
// shape", after which the caller gives the whole text to the tree-based decoder.
class Reader {
public:
    explicit Reader(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

    void ws() {
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
    }
    bool eat(char c) {
        ws();
        if (p_ < end_ && *p_ == c) {
            ++p_;
            return true;
        }
        return false;
    }
    bool at_end() {
        ws();
        return p_ == end_;
    }

    // `{` then a loop of keys: each call to next_key gives the next key, or false at `}` (done
    // set) or on anything ill-formed (done unset).
    bool open_object() { return eat('{'); }
    bool next_key(std::string_view& key, bool& first, bool& done) {
        done = false;
        if (eat('}')) {
            done = true;
            return false;
        }
        if (!first && !eat(',')) return false;
        first = false;
        if (!raw_key(key)) return false;
        return eat(':');
    }

    // `[` then elements: more() is true before each element, false at `]` (done set).
    bool open_array() { return eat('['); }
    bool more(bool& first, bool& done) {
        done = false;
        if (eat(']')) {
            done = true;
            return false;
        }
        if (!first && !eat(',')) return false;
        first = false;
        return true;
    }

    bool string(std::string& out) {
        ws();
        if (p_ == end_ || *p_ != '"') return false;
        ++p_;
        out.clear();
        const char* run = p_;
        // A multi-byte sequence never holds a quote, a backslash or a control byte, so the
        // runs between them are checked for UTF-8 whole.
        const auto take_run = [&]() {
            const std::string_view text(run, p_ - run);
            if (base::find_invalid_utf8(text)) return false;
            out += text;
            return true;
        };
        while (p_ < end_) {
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"') {
                if (!take_run()) return false;
                ++p_;
                return true;
            }
            if (c == '\\') {
                if (!take_run() || !escape(out)) return false;
                run = p_;
                continue;
            }
            if (c < 0x20) return false;
            ++p_;
        }
        return false;
    }

    bool uint(std::uint64_t& out) {
        ws();
        const char* start = p_;
        if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
        if (*p_ == '0' && p_ + 1 < end_ && p_[1] >= '0' && p_[1] <= '9') return false;
        const auto [next, ec] = std::from_chars(start, end_, out);
        if (ec != std::errc{}) return false;
        p_ = next;
        // A fraction or exponent makes it a float in the tree decoder: not ours.
        return p_ == end_ || (*p_ != '.' && *p_ != 'e' && *p_ != 'E');
    }

    bool boolean(bool& out) {
        ws();
        if (literal("true")) {
            out = true;
            return true;
        }
        if (literal("false")) {
            out = false;
            return true;
        }
        return false;
    }

    // A number as the tree decoder's get<double>() gives it (both round correctly). "-0" (an
    // integer zero there, so +0.0) and values beyond double's range go to the slow path.
    bool real(double& out) {
        ws();
        const char* start = p_;
        if (!number()) return false;
        if (p_ - start == 2 && start[0] == '-' && start[1] == '0') return false;
        const auto [end, ec] = std::from_chars(start, p_, out);
        return ec == std::errc{} && end == p_;
    }

    // Any well-formed value, checked as strictly as the tree parser checks it.
    bool skip(int depth = 0) {
        if (depth > kMaxSkipDepth) return false;
        ws();
        if (p_ == end_) return false;
        switch (*p_) {
            case '"':
                return string(scratch_);
            case '{': {
                ++p_;
                bool first = true;
                bool done = false;
                std::string_view key;
                while (next_key(key, first, done)) {
                    if (!skip(depth + 1)) return false;
                }
                return done;
            }
            case '[': {
                ++p_;
                bool first = true;
                bool done = false;
                while (more(first, done)) {
                    if (!skip(depth + 1)) return false;
                }
                return done;
            }
            case 't':
                return literal("true");
            case 'f':
                return literal("false");
            case 'n':
                return literal("null");
            default:
                return number();
        }
    }

private:
    bool literal(std::string_view word) {
        if (static_cast<std::size_t>(end_ - p_) < word.size() ||
            std::string_view(p_, word.size()) != word) {
            return false;
        }
        p_ += word.size();
        return true;
    }

    // JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    bool number() {
        const auto digit = [this] { return p_ < end_ && *p_ >= '0' && *p_ <= '9'; };
        if (p_ < end_ && *p_ == '-') ++p_;
        if (!digit()) return false;
        if (*p_ == '0') {
            ++p_;
        } else {
            while (digit()) ++p_;
        }
        if (p_ < end_ && *p_ == '.') {
            ++p_;
            if (!digit()) return false;
            while (digit()) ++p_;
        }
        if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
            ++p_;
            if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
            if (!digit()) return false;
            while (digit()) ++p_;
        }
        return true;
    }

    // Keys are plain ASCII on every message we decode; an escaped key goes to the slow path.
    bool raw_key(std::string_view& key) {
        ws();
        if (p_ == end_ || *p_ != '"') return false;
        const char* start = ++p_;
        while (p_ < end_ && *p_ != '"') {
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '\\' || c < 0x20 || c >= 0x80) return false;
            ++p_;
        }
        if (p_ == end_) return false;
        key = std::string_view(start, p_ - start);
        ++p_;
        return true;
    }

    bool read_hex4(std::uint32_t& out) {
        if (end_ - p_ < 4) return false;
        const int value = base::hex4(p_);
        if (value < 0) return false;
        out = static_cast<std::uint32_t>(value);
        p_ += 4;
        return true;
    }

    // At a backslash: appends the escaped character; a lone surrogate is ill-formed.
    bool escape(std::string& out) {
        ++p_;
        if (p_ == end_) return false;
        const char c = *p_++;
        switch (c) {
            case '"':
                out += '"';
                return true;
            case '\\':
                out += '\\';
                return true;
            case '/':
                out += '/';
                return true;
            case 'b':
                out += '\b';
                return true;
            case 'f':
                out += '\f';
                return true;
            case 'n':
                out += '\n';
                return true;
            case 'r':
                out += '\r';
                return true;
            case 't':
                out += '\t';
                return true;
            case 'u':
                break;
            default:
                return false;
        }
        std::uint32_t cp = 0;
        if (!read_hex4(cp)) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            std::uint32_t low = 0;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            if (!read_hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        base::append_utf8(out, cp);
        return true;
    }

    const char* p_;
    const char* end_;
    std::string scratch_;
};

// Marks `bit` seen; false when it was seen before (a duplicate key is the slow path's to judge).
bool first_time(unsigned& seen, unsigned bit) {
    if (seen & bit) return false;
    seen |= bit;
    return true;
}

bool read_triple(Reader& r, Triple& out, int depth);

// A term in any key order. Exactly the slow decoder's rules for what it accepts: a "t" of
// i/b/l/t with its value key; a literal normalised (xsd:string and rdf:langString with a
// language dropped). Terms without "t", empty IRIs, a literal with both a datatype and a
// language, and quoted triples nested too deep go to the slow path.
bool read_term(Reader& r, Term& out, int depth) {
    if (!r.open_object()) return false;
    enum : unsigned { kT = 1, kI = 2, kD = 4, kV = 8, kDt = 16, kLn = 32, kTr = 64 };
    unsigned seen = 0;
    std::string kind;
    std::string value;
    std::string datatype;
    std::string language;
    std::optional<Triple> inner;
    bool first = true;
    bool done = false;
    std::string_view key;
    while (r.next_key(key, first, done)) {
        bool ok = true;
        if (key == "t") {
            ok = first_time(seen, kT) && r.string(kind);
        } else if (key == "i") {
            ok = first_time(seen, kI) && r.string(value);
        } else if (key == "v") {
            ok = first_time(seen, kV) && r.string(value);
        } else if (key == "d") {
            ok = first_time(seen, kD) && r.string(value);
        } else if (key == "dt") {
            ok = first_time(seen, kDt) && r.string(datatype);
        } else if (key == "ln") {
            ok = first_time(seen, kLn) && r.string(language);
        } else if (key == "tr") {
            if (depth + 1 >= kMaxQuotedTripleDepth) return false;
            inner.emplace();
            ok = first_time(seen, kTr) && read_triple(r, *inner, depth + 1);
        } else {
            ok = r.skip();
        }
        if (!ok) return false;
    }
    if (!done || !(seen & kT)) return false;
    // Each kind takes exactly one value key; another kind's value key would be ignored by the
    // slow path, but it also shares `value` here, so it is left to that path.
    const unsigned values = seen & (kI | kD | kV | kTr);
    if (kind == "i") {
        if (values != kI || value.empty()) return false;
        out = Term(Iri{std::move(value)});
        return true;
    }
    if (kind == "b") {
        if (values != kD) return false;
        out = Term(BlankNode{std::move(value)});
        return true;
    }
    if (kind == "l") {
        if (values != kV) return false;
        if (datatype == kXsdString) datatype.clear();
        if (!language.empty()) {
            if (datatype == kRdfLangString) datatype.clear();
            if (!datatype.empty()) return false;
        }
        out = Term(Literal{std::move(value), std::move(datatype), std::move(language)});
        return true;
    }
    if (kind == "t") {
        if (values != kTr) return false;
        out = quoted(std::move(*inner));
        return true;
    }
    return false;
}

bool read_triple(Reader& r, Triple& out, int depth) {
    if (!r.open_object()) return false;
    enum : unsigned { kS = 1, kP = 2, kO = 4, kG = 8 };
    unsigned seen = 0;
    std::string graph;
    bool first = true;
    bool done = false;
    std::string_view key;
    while (r.next_key(key, first, done)) {
        bool ok = true;
        if (key == "s") {
            ok = first_time(seen, kS) && read_term(r, out.s, depth);
        } else if (key == "p") {
            ok = first_time(seen, kP) && read_term(r, out.p, depth);
        } else if (key == "o") {
            ok = first_time(seen, kO) && read_term(r, out.o, depth);
        } else if (key == "g") {
            ok = first_time(seen, kG) && r.string(graph);
        } else {
            ok = r.skip();
        }
        if (!ok) return false;
    }
    if (!done || (seen & (kS | kP | kO)) != (kS | kP | kO)) return false;
    if (graph.empty()) {
        out.graph.reset();
    } else {
        out.graph = std::move(graph);
    }
    return true;
}

bool read_triples(Reader& r, std::vector<Triple>& out) {
    if (!r.open_array()) return false;
    out.clear();
    bool first = true;
    bool done = false;
    while (r.more(first, done)) {
        out.emplace_back();
        if (!read_triple(r, out.back(), 0)) return false;
    }
    return done;
}

bool read_strings(Reader& r, std::vector<std::string>& out) {
    if (!r.open_array()) return false;
    out.clear();
    bool first = true;
    bool done = false;
    while (r.more(first, done)) {
        out.emplace_back();
        if (!r.string(out.back())) return false;
    }
    return done;
}

bool read_vectors(Reader& r, std::vector<std::vector<double>>& out) {
    if (!r.open_array()) return false;
    out.clear();
    bool first = true;
    bool done = false;
    while (r.more(first, done)) {
        auto& vector = out.emplace_back();
        if (!r.open_array()) return false;
        bool first_value = true;
        bool end = false;
        while (r.more(first_value, end)) {
            if (!r.real(vector.emplace_back())) return false;
        }
        if (!end) return false;
    }
    return done;
}

// Reads one top-level object with `field(key)` per key (false: leave it to the slow path),
// then requires the end of the text.
template <typename Field>
bool read_message(std::string_view text, Field&& field) {
    Reader r(text);
    if (!r.open_object()) return false;
    bool first = true;
    bool done = false;
    std::string_view key;
    while (r.next_key(key, first, done)) {
        if (!field(r, key)) return false;
    }
    return done && r.at_end();
}

template <typename T>
base::Result<T> fast_or_slow(std::string_view text, std::optional<T>&& fast) {
    if (fast) return std::move(*fast);
    return decode_body<T>(text);
}

}  // namespace

// ---- public writers -----------------------------------------------------------------------

void ObjectWriter::string(std::string_view name, std::string_view value) {
    append_json_string(key(name), value);
}

// The shared writer (base/json_string); ill-formed UTF-8 (rare) is written as the tree writer
// writes it, replaced, for identical bytes.
void append_json_string(std::string& out, std::string_view value) {
    if (base::append_json_string(out, value)) return;
    out += nlohmann::json(std::string(value))
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Keys in the sorted order of nlohmann's std::map objects, so the bytes match dump().
void append_json(std::string& out, const Term& term) {
    switch (term.kind()) {
        case Term::Kind::kIri:
            append_json_iri(out, term.as_iri().value);
            return;
        case Term::Kind::kBlankNode:
            out += "{\"d\":";
            append_json_string(out, term.as_blank().id);
            out += ",\"t\":\"b\"}";
            return;
        case Term::Kind::kLiteral: {
            const auto& lit = term.as_literal();
            append_json_literal(out, lit.value, lit.datatype, lit.language);
            return;
        }
        case Term::Kind::kTriple: {
            const auto& t = term.as_triple();
            out += "{\"t\":\"t\",\"tr\":{\"o\":";
            append_json(out, t.o);
            out += ",\"p\":";
            append_json(out, t.p);
            out += ",\"s\":";
            append_json(out, t.s);
            out += "}}";
            return;
        }
    }
}

void append_json(std::string& out, const Triple& triple) {
    out += '{';
    if (triple.graph) {
        out += "\"g\":";
        append_json_string(out, *triple.graph);
        out += ',';
    }
    out += "\"o\":";
    append_json(out, triple.o);
    out += ",\"p\":";
    append_json(out, triple.p);
    out += ",\"s\":";
    append_json(out, triple.s);
    out += '}';
}

void append_json(std::string& out, std::span<const Triple> triples) {
    append_array(out, triples, [](std::string& o, const Triple& t) { append_json(o, t); });
}

std::string encode_text(const TriplesResponse& m) {
    std::string out;
    out.reserve(64 + m.triples.size() * 160);
    append_json(ObjectWriter(out).key("triples"), m.triples);
    return out;
}

std::string encode_text(const TriplesBatchResponse& m) {
    std::size_t count = 0;
    for (const auto& r : m.results) count += r.size();
    std::string out;
    out.reserve(64 + count * 160);
    {
        ObjectWriter object(out);
        append_array(object.key("results"), m.results,
                     [](std::string& o, const auto& r) { append_json(o, r); });
    }
    return out;
}

std::string encode_text(const EmbeddingsResponse& m) {
    std::size_t values = 0;
    for (const auto& v : m.vectors) values += v.size();
    std::string out;
    out.reserve(64 + m.model.size() + values * 24);
    {
        ObjectWriter object(out);
        object.uint("dim", m.dim);
        object.string("model", m.model);
        append_array(object.key("vectors"), m.vectors,
                     [](std::string& o, const std::vector<double>& vector) {
                         append_array(o, vector, [](std::string& o2, double value) {
                             append_double(o2, value);
                         });
                     });
    }
    return out;
}

std::string encode_text(const ExplainMessage& m) { return encode_text(m, m.explain_triples); }

namespace {

template <typename WriteTriples>
std::string encode_explain(const ExplainMessage& m, WriteTriples&& write_triples,
                           std::size_t reserve) {
    std::string out;
    out.reserve(reserve);
    {
        ObjectWriter object(out);
        object.boolean("end_of_trace", m.end_of_trace);
        if (m.error) object.error("error", *m.error);
        object.string("explain_graph", m.explain_graph);
        object.string("explain_id", m.explain_id);
        write_triples(object.key("explain_triples"));
        object.string("message_type", "explain");
        if (m.parent_uri) object.string("parent_uri", *m.parent_uri);
        object.uint("seq", m.seq);
        object.string("service", m.service);
        object.string("session", m.session);
        object.string("trace_status", to_string(m.trace_status));
        object.string("worker", m.worker);
    }
    return out;
}

}  // namespace

std::string encode_text(const ExplainMessage& m, std::span<const Triple> triples) {
    return encode_explain(
        m, [triples](std::string& out) { append_json(out, triples); }, 256 + triples.size() * 256);
}

std::string encode_text(const ExplainMessage& m,
                        const std::function<void(std::string&)>& write_triples,
                        std::size_t reserve) {
    return encode_explain(m, write_triples, reserve);
}

std::string encode_text(const RagResponse& m) {
    std::string out;
    out.reserve(256 + m.response.size() + m.explain_triples.size() * 200);
    {
        ObjectWriter object(out);
        // Keys in the tree encoder's (sorted) order.
        if (m.answer) object.string("answer", *m.answer);
        append_array(object.key("answer_selections"), m.answer_selections,
                     [](std::string& o, const std::string& uri) { append_json_string(o, uri); });
        append_array(object.key("citations"), m.citations,
                     [](std::string& o, const RagCitation& c) {
                         ObjectWriter cited(o);
                         if (c.char_end) cited.uint("char_end", *c.char_end);
                         if (c.char_offset) cited.uint("char_offset", *c.char_offset);
                         cited.string("chunk", c.chunk);
                         cited.string("document", c.document);
                         cited.string("id", c.id);
                         cited.string("kind", c.kind);
                         cited.uint("n", c.n);
                         cited.string("selection", c.selection);
                         append_array(cited.key("spans"), c.spans,
                                      [](std::string& s, const AnswerSpan& span) {
                                          ObjectWriter written(s);
                                          written.uint("end", span.end);
                                          written.uint("start", span.start);
                                      });
                         cited.string("text", c.text);
                         cited.uint("tier", c.tier);
                         cited.string("title", c.title);
                     });
        object.boolean("end_of_session", m.end_of_session);
        object.boolean("end_of_stream", m.end_of_stream);
        if (m.error) object.error("error", *m.error);
        object.string("explain_graph", m.explain_graph);
        object.string("explain_id", m.explain_id);
        append_json(object.key("explain_triples"), m.explain_triples);
        object.uint("in_token", m.in_token);
        object.string("message_type", to_string(m.message_type));
        object.string("model", m.model);
        object.uint("out_token", m.out_token);
        object.string("response", m.response);
        append_array(
            object.key("sources"), m.sources,
            [](std::string& o, const std::string& source) { append_json_string(o, source); });
    }
    return out;
}

// ---- public readers -----------------------------------------------------------------------

template <>
base::Result<TriplesResponse> decode_text<TriplesResponse>(std::string_view text) {
    std::optional<TriplesResponse> m(std::in_place);
    bool seen = false;
    const bool ok = read_message(text, [&](Reader& r, std::string_view key) {
        if (key != "triples") return r.skip();
        if (seen) return false;
        seen = true;
        return read_triples(r, m->triples);
    });
    if (!ok) m.reset();
    return fast_or_slow(text, std::move(m));
}

template <>
base::Result<TriplesBatchResponse> decode_text<TriplesBatchResponse>(std::string_view text) {
    std::optional<TriplesBatchResponse> m(std::in_place);
    bool seen = false;
    const bool ok = read_message(text, [&](Reader& r, std::string_view key) {
        if (key != "results") return r.skip();
        if (seen || !r.open_array()) return false;
        seen = true;
        bool first = true;
        bool done = false;
        while (r.more(first, done)) {
            m->results.emplace_back();
            if (!read_triples(r, m->results.back())) return false;
        }
        return done;
    });
    if (!ok) m.reset();
    return fast_or_slow(text, std::move(m));
}

template <>
base::Result<RagResponse> decode_text<RagResponse>(std::string_view text) {
    std::optional<RagResponse> m(std::in_place);
    unsigned seen = 0;
    std::string scratch;
    const bool ok = read_message(text, [&](Reader& r, std::string_view key) {
        if (key == "message_type") {
            if (!first_time(seen, 1) || !r.string(scratch)) return false;
            if (scratch == "chunk")
                m->message_type = RagMessageType::kChunk;
            else if (scratch == "explain")
                m->message_type = RagMessageType::kExplain;
            else
                return false;  // "error" comes with an error object: the slow path's
            return true;
        }
        if (key == "response") return first_time(seen, 2) && r.string(m->response);
        if (key == "explain_id") return first_time(seen, 4) && r.string(m->explain_id);
        if (key == "explain_graph") return first_time(seen, 8) && r.string(m->explain_graph);
        if (key == "explain_triples")
            return first_time(seen, 16) && read_triples(r, m->explain_triples);
        if (key == "end_of_stream") return first_time(seen, 32) && r.boolean(m->end_of_stream);
        if (key == "end_of_session") return first_time(seen, 64) && r.boolean(m->end_of_session);
        if (key == "in_token") return first_time(seen, 128) && r.uint(m->in_token);
        if (key == "out_token") return first_time(seen, 256) && r.uint(m->out_token);
        if (key == "model") return first_time(seen, 512) && r.string(m->model);
        if (key == "sources") return first_time(seen, 1024) && read_strings(r, m->sources);
        if (key == "answer") {
            if (!first_time(seen, 2048) || !r.string(scratch)) return false;
            m->answer = scratch;
            return true;
        }
        if (key == "answer_selections")
            return first_time(seen, 4096) && read_strings(r, m->answer_selections);
        if (key == "citations") {
            // Only a FINAL has them, once per request: an empty list here, the rest the slow
            // path's.
            if (!first_time(seen, 8192) || !r.open_array()) return false;
            bool first = true;
            bool done = false;
            return !r.more(first, done) && done;
        }
        if (key == "error") return false;
        return r.skip();
    });
    if (!ok) m.reset();
    return fast_or_slow(text, std::move(m));
}

template <>
base::Result<EmbeddingsResponse> decode_text<EmbeddingsResponse>(std::string_view text) {
    std::optional<EmbeddingsResponse> m(std::in_place);
    unsigned seen = 0;
    const bool ok = read_message(text, [&](Reader& r, std::string_view key) {
        if (key == "vectors") return first_time(seen, 1) && read_vectors(r, m->vectors);
        if (key == "model") return first_time(seen, 2) && r.string(m->model);
        if (key == "dim") {
            std::uint64_t dim = 0;
            if (!first_time(seen, 4) || !r.uint(dim) || dim > 0xFFFF'FFFFu) return false;
            m->dim = static_cast<std::uint32_t>(dim);
            return true;
        }
        return r.skip();
    });
    if (!ok) m.reset();
    return fast_or_slow(text, std::move(m));
}

}  // namespace glassbox::schema
