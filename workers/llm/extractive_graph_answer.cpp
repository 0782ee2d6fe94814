// The extractive model's answer from knowledge-graph edges: the short answer, the sentence
// that states it, and the supporting facts. Deterministic: ties broken by input order.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "text/stopwords.hpp"
#include "text/tokenize.hpp"
#include "workers/llm/extractive_model.hpp"
#include "workers/llm/extractive_question.hpp"

namespace glassbox::llm {

namespace {

using detail::is_ascii_lower;
using detail::valid_marker_id;
using text::lower;

// A predicate that reads as a verb phrase ("is in country", "plays position", "born in").
bool verbal_predicate(std::string_view predicate) {
    static const std::unordered_set<std::string_view> verbs{
        "is",       "are",      "was",       "were",     "has",   "have",    "had",     "plays",
        "played",   "wears",    "wore",      "lives",    "lived", "born",    "died",    "located",
        "works",    "worked",   "founded",   "directed", "wrote", "written", "owns",    "owned",
        "contains", "includes", "belongs",   "speaks",   "won",   "married", "studied", "created",
        "produced", "released", "published", "based",    "made",  "leads",   "led",     "holds",
        "held",     "uses",     "used",      "knows",    "likes", "hosts",   "hosted"};
    static const std::unordered_set<std::string_view> trailing{"of", "in",   "by",   "for", "at",
                                                               "to", "with", "from", "on",  "as"};
    const auto w = text::words(predicate);
    if (w.empty()) return true;
    return verbs.contains(w.front()) || trailing.contains(w.back());
}

std::string join_list(const std::vector<std::string>& items) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += i + 1 == items.size() ? " and " : ", ";
        out += items[i];
    }
    return out;
}

}  // namespace

ComposedAnswer ExtractiveModel::answer_from_edges(
    std::string_view /*question*/, const std::vector<LabelledEdge>& edges) const {
    constexpr std::size_t kMaxSentences = 15;
    constexpr std::size_t kMaxPerSentence = 10;
    struct Group {
        std::string fixed;      // the shared end
        std::string predicate;  // as written, " inverse" removed
        bool inverse = false;
        std::vector<std::string> others;
        std::vector<std::string> ids;
    };
    std::vector<Group> groups;
    std::map<std::tuple<std::string, std::string, bool>, std::size_t> index;
    std::set<std::string> cited;
    for (const auto& e : edges) {
        if (!valid_marker_id(e.id) || cited.contains(e.id)) continue;
        std::string predicate = e.p;
        bool inverse = false;
        const std::string lp = lower(predicate);
        for (std::string_view suffix :
             {std::string_view(" inverse"), std::string_view("_inverse")}) {
            if (lp.size() > suffix.size() && lp.ends_with(suffix)) {
                predicate.resize(predicate.size() - suffix.size());
                inverse = true;
            }
        }
        std::replace(predicate.begin(), predicate.end(), '_', ' ');
        const auto key = std::make_tuple(e.s, lower(predicate), inverse);
        auto it = index.find(key);
        if (it == index.end()) {
            if (groups.size() >= kMaxSentences) continue;
            it = index.emplace(key, groups.size()).first;
            groups.push_back({e.s, predicate, inverse, {}, {}});
        }
        Group& g = groups[it->second];
        if (g.others.size() >= kMaxPerSentence) continue;
        if (std::find(g.others.begin(), g.others.end(), e.o) == g.others.end())
            g.others.push_back(e.o);
        g.ids.push_back(e.id);
        cited.insert(e.id);
    }
    std::vector<std::string> sentences;
    if (groups.empty()) {
        sentences.emplace_back("The knowledge graph gave no facts for this question.");
        return {{}, {}, std::move(sentences)};
    }
    for (const auto& g : groups) {
        std::string markers;
        for (const auto& id : g.ids) markers += "[" + id + "]";
        std::string sentence;
        const std::string others = join_list(g.others);
        if (g.inverse) {
            // "Forward plays position inverse X" reads as "X plays position Forward".
            sentence = verbal_predicate(g.predicate)
                           ? others + " " + g.predicate + " " + g.fixed
                           : g.fixed + " is " + g.predicate + " of " + others;
        } else if (verbal_predicate(g.predicate)) {
            sentence = g.fixed + " " + g.predicate + " " + others;
        } else {
            sentence = "The " + g.predicate + " of " + g.fixed +
                       (g.others.size() > 1 ? " are " : " is ") + others;
        }
        if (!sentence.empty() && is_ascii_lower(sentence.front()))
            sentence.front() = static_cast<char>(sentence.front() - 'a' + 'A');
        sentences.push_back(sentence + " " + markers + ".");
    }
    return {{}, {}, std::move(sentences)};
}

}  // namespace glassbox::llm
