// Conflicts between a looked-up fact and a document passage (workers/agent/answer_conflicts.hpp).
#include "workers/agent/answer_conflicts.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "text/tokenize.hpp"

namespace glassbox::agent {
namespace {

// A value longer than this many words is a sentence, not a value to compare.
constexpr std::size_t kMaxValueWords = 8;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The numbers `text` holds: runs of digits, with a '.' or ',' between digits kept inside one
// number ("1,200" is 1200, "28.5" is 28.5; a thousands comma and a decimal point as English
// writes them).
std::set<double> numbers_in(std::string_view text) {
    std::set<double> out;
    for (std::size_t i = 0; i < text.size();) {
        if (!is_digit(text[i])) {
            ++i;
            continue;
        }
        std::string digits;
        while (i < text.size()) {
            if (is_digit(text[i])) {
                digits.push_back(text[i++]);
            } else if ((text[i] == '.' || text[i] == ',') && i + 1 < text.size() &&
                       is_digit(text[i + 1])) {
                if (text[i] == '.') digits.push_back('.');
                ++i;
            } else {
                break;
            }
        }
        out.insert(std::strtod(digits.c_str(), nullptr));
    }
    return out;
}

bool yes_or_no(const std::string& normalised) { return normalised == "yes" || normalised == "no"; }

template <typename T>
bool disjoint(const std::set<T>& a, const std::set<T>& b) {
    return std::none_of(a.begin(), a.end(), [&](const T& x) { return b.contains(x); });
}

template <typename T>
bool subset(const std::set<T>& a, const std::set<T>& b) {
    return std::all_of(a.begin(), a.end(), [&](const T& x) { return b.contains(x); });
}

// `text` before its shortest tail of space-separated words that normalises to `value` (trailing
// spaces dropped); nullopt when no tail does.
std::optional<std::string> before_tail(std::string_view text, const std::string& value) {
    for (std::size_t end = text.size(); end > 0;) {
        while (end > 0 && text[end - 1] == ' ') --end;
        while (end > 0 && text[end - 1] != ' ') --end;
        if (text::normalize(text.substr(end)) != value) continue;
        while (end > 0 && text[end - 1] == ' ') --end;
        return std::string(text.substr(0, end));
    }
    return std::nullopt;
}

}  // namespace

bool values_disagree(std::string_view a, std::string_view b) {
    const std::string x = text::normalize(a);
    const std::string y = text::normalize(b);
    if (x.empty() || y.empty() || x == y) return false;
    if (text::words(x).size() > kMaxValueWords || text::words(y).size() > kMaxValueWords)
        return false;
    if (yes_or_no(x) || yes_or_no(y)) return yes_or_no(x) && yes_or_no(y);
    const auto nx = numbers_in(a);
    const auto ny = numbers_in(b);
    if (!nx.empty() || !ny.empty()) return !nx.empty() && !ny.empty() && disjoint(nx, ny);
    const auto sx_list = text::content_stems(x);
    const auto sy_list = text::content_stems(y);
    const std::set<std::string> sx(sx_list.begin(), sx_list.end());
    const std::set<std::string> sy(sy_list.begin(), sy_list.end());
    if (sx.empty() || sy.empty() || subset(sx, sy) || subset(sy, sx)) return false;
    return disjoint(sx, sy);
}

std::optional<EvidenceValue> edge_answer_value(std::string_view answer,
                                               const schema::RagCitation& ground) {
    if (ground.kind != "edge") return std::nullopt;
    const std::string fact = text::normalize(ground.text);
    const std::string value = text::normalize(answer);
    if (value.empty() || fact.size() <= value.size() || !fact.ends_with(" " + value))
        return std::nullopt;
    EvidenceValue out;
    auto subject = before_tail(ground.text, value);
    if (!subject || subject->empty()) return std::nullopt;
    out.subject = std::move(*subject);
    out.value = std::string(answer);
    out.selection = ground.selection;
    out.sources = {ground.chunk.empty() ? ground.document : ground.chunk};
    return out;
}

std::vector<schema::explain::AnswerConflict> fact_passage_conflicts(
    std::string_view answer, const std::vector<EvidenceValue>& facts,
    const std::vector<EvidenceValue>& passages) {
    std::vector<schema::explain::AnswerConflict> out;
    const std::string said = text::normalize(answer);
    if (said.empty()) return out;
    for (const auto& fact : facts) {
        for (const auto& passage : passages) {
            if (!values_disagree(fact.value, passage.value)) continue;
            const bool fact_said = text::normalize(fact.value) == said;
            if (!fact_said && text::normalize(passage.value) != said) continue;
            const EvidenceValue& stated = fact_said ? fact : passage;
            const EvidenceValue& rival = fact_said ? passage : fact;
            schema::explain::AnswerConflict c;
            c.subject = fact.subject;
            c.predicate = fact.predicate;
            c.stated = stated.value;
            c.rival = rival.value;
            c.stated_selection = stated.selection;
            c.rival_selection = rival.selection;
            c.stated_sources = stated.sources;
            c.rival_sources = rival.sources;
            c.stated_citation = stated.citation;
            c.rival_citation = rival.citation;
            out.push_back(std::move(c));
        }
    }
    return out;
}

}  // namespace glassbox::agent
