// An event's span facts as a short text record (span_facts.hpp).
#include "workers/trace_collector/span_facts.hpp"

#include <array>
#include <charconv>
#include <limits>
#include <utility>

#include "schema/vocabulary.hpp"

namespace glassbox::trace::detail {

namespace {

namespace v = schema::vocab;

constexpr std::array<std::pair<std::string_view, SpanFact>, 18> kPredicates{{
    {v::kRdfType, SpanFact::kType},
    {v::kProvGeneratedAtTime, SpanFact::kGeneratedAt},
    {v::kDurationMs, SpanFact::kDuration},
    {v::kInputTokens, SpanFact::kInputTokens},
    {v::kOutputTokens, SpanFact::kOutputTokens},
    {v::kModelName, SpanFact::kModel},
    {v::kAction, SpanFact::kAction},
    {v::kToolStatus, SpanFact::kToolStatus},
    {v::kProvWasDerivedFrom, SpanFact::kDerivedFrom},
    {v::kExploredEdgeProperty, SpanFact::kRetrieved},
    {v::kRetrievedChunk, SpanFact::kRetrieved},
    {v::kScore, SpanFact::kScore},
    {v::kProvUsed, SpanFact::kUsed},
    {v::kEmbeddingModel, SpanFact::kEmbeddingModel},
    {v::kEmbeddingInputs, SpanFact::kEmbeddingInputs},
    {v::kEmbeddingDimensions, SpanFact::kEmbeddingDimensions},
    {v::kEmbeddingStartedAt, SpanFact::kEmbeddingStartedAt},
    {v::kEmbeddingDurationMs, SpanFact::kEmbeddingDuration},
}};

constexpr char kRangeCode = 'R';
// More items than an event's triples could name: not a record the writer wrote.
constexpr std::uint64_t kMaxRangeItems = 1'000'000;

bool is_code(char c) noexcept {
    if (c == kRangeCode) return true;
    for (const auto& [iri, fact] : kPredicates) {
        if (static_cast<char>(fact) == c) return true;
    }
    return false;
}

// `iri` as stem + a decimal number without leading zeros; false when it does not end so.
bool split_number(std::string_view iri, std::string_view& stem, std::uint64_t& n) noexcept {
    std::size_t digits = 0;
    while (digits < iri.size() && digits < 19 && iri[iri.size() - 1 - digits] >= '0' &&
           iri[iri.size() - 1 - digits] <= '9')
        ++digits;
    if (digits == 0 || digits == iri.size()) return false;
    const std::string_view number = iri.substr(iri.size() - digits);
    if (number.size() > 1 && number.front() == '0') return false;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
    if (ec != std::errc() || end != number.data() + number.size()) return false;
    stem = iri.substr(0, iri.size() - digits);
    return true;
}

// Reads one field of a record line up to a tab or the line's end, unescaping into `out`.
bool read_field(std::string_view& line, std::string& out) {
    out.clear();
    std::size_t i = 0;
    for (; i < line.size() && line[i] != '\t'; ++i) {
        if (line[i] != '\\') {
            out += line[i];
            continue;
        }
        if (++i >= line.size()) return false;
        switch (line[i]) {
            case '\\':
                out += '\\';
                break;
            case 't':
                out += '\t';
                break;
            case 'n':
                out += '\n';
                break;
            case '0':
                out += '\0';
                break;
            default:
                return false;
        }
    }
    line.remove_prefix(i < line.size() ? i + 1 : i);
    return true;
}

// The session's prefix, through the last ':' (urn:glassbox:<uuid>:).
std::string_view prefix_of(std::string_view session) {
    const std::size_t colon = session.rfind(':');
    return colon == std::string_view::npos ? std::string_view{} : session.substr(0, colon + 1);
}

// A subject or object field as written: `.`, `^`, `~`+rest, `<`+IRI or `"`+literal.
bool expand(const std::string& field, std::string_view prefix, std::string_view session,
            std::string_view explain_id, std::string& out, bool& is_iri) {
    if (field.empty()) return false;
    is_iri = field[0] != '"';
    switch (field[0]) {
        case '.':
            out.assign(explain_id);
            return field.size() == 1;
        case '^':
            out.assign(session);
            return field.size() == 1;
        case '~':
            out.assign(prefix);
            out.append(field, 1);
            return true;
        case '<':
        case '"':
            out.assign(field, 1);
            return true;
        default:
            return false;
    }
}

}  // namespace

bool span_fact_of(std::string_view iri, SpanFact& fact) noexcept {
    for (const auto& [predicate, f] : kPredicates) {
        if (predicate.size() == iri.size() && predicate == iri) {
            fact = f;
            return true;
        }
    }
    return false;
}

void SpanFactWriter::begin(std::string_view session, std::string_view explain_id) {
    session_.assign(session);
    explain_id_.assign(explain_id);
    prefix_ = prefix_of(session_);
    out_.clear();
    retrieved_.clear();
    range_open_ = false;
}

void SpanFactWriter::put_escaped(std::string_view text) {
    for (const char c : text) {
        if (c == '\\') {
            out_ += "\\\\";
        } else if (c == '\t') {
            out_ += "\\t";
        } else if (c == '\n') {
            out_ += "\\n";
        } else if (c == '\0') {
            out_ += "\\0";  // PostgreSQL text holds no NUL
        } else {
            out_ += c;
        }
    }
}

void SpanFactWriter::put_iri(std::string_view iri) {
    if (!prefix_.empty() && iri.size() > prefix_.size() &&
        iri.substr(0, prefix_.size()) == prefix_) {
        out_ += '~';
        put_escaped(iri.substr(prefix_.size()));
    } else {
        out_ += '<';
        put_escaped(iri);
    }
}

void SpanFactWriter::put_subject(std::string_view s) {
    if (s == explain_id_) {
        out_ += '.';
    } else if (s == session_) {
        out_ += '^';
    } else {
        put_iri(s);
    }
}

void SpanFactWriter::flush_range() {
    if (!range_open_) return;
    range_open_ = false;
    const Retrieved& r = retrieved_.back();
    out_ += kRangeCode;
    out_ += ".\t";
    put_iri(r.stem);
    out_ += '\t';
    out_ += std::to_string(r.first);
    out_ += '\t';
    out_ += std::to_string(r.last);
    out_ += '\n';
}

bool SpanFactWriter::retrieved_here(std::string_view iri) const {
    std::string_view stem;
    std::uint64_t n = 0;
    const bool numbered = split_number(iri, stem, n);
    for (auto r = retrieved_.rbegin(); r != retrieved_.rend(); ++r) {
        if (r->numbered ? numbered && r->stem == stem && n >= r->first && n <= r->last
                        : r->stem == iri)
            return true;
    }
    return false;
}

void SpanFactWriter::see(std::string_view s, std::string_view p, std::string_view o,
                         bool o_is_iri) {
    // The common triple (a reified edge's, a chunk's) is of neither the step nor the run, and
    // only a score of a retrieved item is wanted of those.
    const bool own = (s.size() == explain_id_.size() && s == explain_id_) ||
                     (s.size() == session_.size() && s == session_);
    SpanFact fact{};
    if (!own) {
        if (p.size() != v::kScore.size() || p != v::kScore || o_is_iri || retrieved_.empty() ||
            !retrieved_here(s))
            return;
        fact = SpanFact::kScore;
    } else if (!span_fact_of(p, fact) || fact == SpanFact::kScore) {
        return;
    }
    if (fact == SpanFact::kType &&
        (!o_is_iri || o.size() <= v::kGbNs.size() || o.substr(0, v::kGbNs.size()) != v::kGbNs))
        return;
    if (fact == SpanFact::kRetrieved && o_is_iri && s == explain_id_) {
        std::string_view stem;
        std::uint64_t n = 0;
        if (split_number(o, stem, n)) {
            if (range_open_ && retrieved_.back().stem == stem &&
                retrieved_.back().last != std::numeric_limits<std::uint64_t>::max() &&
                retrieved_.back().last + 1 == n) {
                retrieved_.back().last = n;
                return;
            }
            flush_range();
            retrieved_.push_back(Retrieved{std::string(stem), n, n, true});
            range_open_ = true;
            return;
        }
        flush_range();
        retrieved_.push_back(Retrieved{std::string(o), 0, 0, false});
    }
    out_ += static_cast<char>(fact);
    put_subject(s);
    out_ += '\t';
    if (o_is_iri) {
        put_iri(o);
    } else {
        out_ += '"';
        put_escaped(o);
    }
    out_ += '\n';
}

const std::string& SpanFactWriter::finish() {
    flush_range();
    return out_;
}

bool each_span_fact(std::string_view record, std::string_view session, std::string_view explain_id,
                    const std::function<void(const SpanFactTriple&)>& each,
                    const std::function<void(const RetrievedRange&)>& range) {
    const std::string_view prefix = prefix_of(session);
    std::string field;
    std::string subject;
    std::string object;
    std::string item;
    while (!record.empty()) {
        const std::size_t eol = record.find('\n');
        if (eol == std::string_view::npos) return false;
        std::string_view line = record.substr(0, eol);
        record.remove_prefix(eol + 1);
        if (line.empty() || !is_code(line[0])) return false;
        const char code = line[0];
        line.remove_prefix(1);
        bool s_iri = false;
        bool o_iri = false;
        if (!read_field(line, field) ||
            !expand(field, prefix, session, explain_id, subject, s_iri) || !s_iri)
            return false;
        if (!read_field(line, field) || !expand(field, prefix, session, explain_id, object, o_iri))
            return false;
        if (code != kRangeCode) {
            if (!line.empty()) return false;
            each(SpanFactTriple{static_cast<SpanFact>(code), subject, object, o_iri});
            continue;
        }
        std::uint64_t first = 0;
        std::uint64_t last = 0;
        const std::size_t tab = line.find('\t');
        if (!o_iri || tab == std::string_view::npos) return false;
        const std::string_view a = line.substr(0, tab);
        const std::string_view b = line.substr(tab + 1);
        if (std::from_chars(a.data(), a.data() + a.size(), first).ptr != a.data() + a.size() ||
            std::from_chars(b.data(), b.data() + b.size(), last).ptr != b.data() + b.size() ||
            a.empty() || b.empty() || last < first || last - first >= kMaxRangeItems)
            return false;
        if (range) {
            range(RetrievedRange{subject, object, first, last});
            continue;
        }
        for (std::uint64_t n = first;; ++n) {
            item = object;
            item += std::to_string(n);
            each(SpanFactTriple{SpanFact::kRetrieved, subject, item, true});
            if (n == last) break;
        }
    }
    return true;
}

}  // namespace glassbox::trace::detail
