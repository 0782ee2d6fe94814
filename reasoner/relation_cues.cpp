// The relation-word lexicon (concepts and the words that express them) and how a predicate
// matches the relation words of a question.
#include "reasoner/detail/relation_cues.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "text/similarity.hpp"
#include "text/stopwords.hpp"
#include "text/tokenize.hpp"

namespace glassbox::reasoner::detail {

namespace {

// Relation concepts, each with the words that express it. A word may express several; its
// first group (in this order) is its main one.
constexpr std::pair<std::string_view, std::string_view> kRelationGroups[] = {
    {"spouse",
     "spouse spouses wife wives husband husbands married marry marries marriage "
     "partner partners consort darling couple half widow widower bride groom"},
    {"child",
     "child children kid kids son sons daughter daughters offspring heir heirs "
     "descendant descendants baby"},
    {"parent",
     "parent parents father fathers mother mothers dad dads mom moms mum mama papa "
     "daddy mommy ancestor"},
    {"sibling", "sibling siblings brother brothers sister sisters"},
    {"gender", "gender sex male female man woman men women boy girl"},
    {"nation", "nationality nation nations national citizen citizenship"},
    {"religion", "religion religions faith religious belief beliefs believe practice"},
    {"profession",
     "profession occupation job jobs work works working worked career "
     "employment trade"},
    {"institution",
     "institution organization organisation organizations university college "
     "school employer company affiliation"},
    {"ethnicity", "ethnicity ethnic race ancestry"},
    {"birth", "born birth birthplace native"},
    {"death", "died death die dies dead deceased killed buried"},
    {"cause", "cause causes why reason"},
    {"location",
     "location located where place places live lives lived living reside "
     "residence city town hometown based situated"},
    {"country", "country countries nation state land"},
    {"age", "age aged old years"},
    {"number", "number numbers jersey shirt wear wears wearing worn"},
    {"position", "position positions role forward midfielder defender goalkeeper"},
    {"club",
     "club clubs team teams squad play plays playing played player players football "
     "soccer professional"},
    {"author", "author authors wrote write writes written writer"},
    {"director", "director directed direct directs"},
    {"founder", "founder founders founded found establish established"},
    {"member", "member members band group"},
    {"language", "language languages speak speaks spoken"},
    {"time", "when date year released release published founded"},
    {"award", "award awards prize won win wins"},
    {"genre", "genre genres style"},
    {"capital", "capital"},
    {"population", "population inhabitants people"},
    {"height", "height tall high elevation altitude"},
};

const std::unordered_map<std::string, std::vector<std::string_view>>& lexicon() {
    static const auto map = [] {
        std::unordered_map<std::string, std::vector<std::string_view>> m;
        for (const auto& [group, list] : kRelationGroups) {
            std::size_t pos = 0;
            while (pos < list.size()) {
                std::size_t end = list.find(' ', pos);
                if (end == std::string_view::npos) end = list.size();
                const std::string word(list.substr(pos, end - pos));
                if (!word.empty()) {
                    auto& cues = m[word];
                    if (std::find(cues.begin(), cues.end(), group) == cues.end())
                        cues.push_back(group);
                }
                pos = end + 1;
            }
        }
        // "nation" and "country" express each other and a place.
        m["country"].push_back("nation");
        m["country"].push_back("location");
        m["nation"].push_back("location");
        return m;
    }();
    return map;
}

}  // namespace

const std::vector<std::string_view>& relation_cues(std::string_view lower_word) {
    static const std::vector<std::string_view> none;
    const auto& map = lexicon();
    if (auto it = map.find(std::string(lower_word)); it != map.end()) return it->second;
    if (auto it = map.find(text::stem(lower_word)); it != map.end()) return it->second;
    return none;
}

// How well each of a predicate's words expresses each relation word: 1 same stem, 0.8 a shared
// cue, up to 0.6 for similar spelling ("nationality"/"national"). Rows: the predicate's content
// words; columns: `rel`.
// A word's spelling is compared through trigrams: the relation words' made with the question's
// analysis, the predicate word's once for all of them (trigram_similarity of the two strings).
std::vector<std::vector<double>> predicate_match(std::string_view predicate,
                                                 const std::vector<RelationWord>& rel) {
    std::vector<std::vector<double>> rows;
    for (const auto& w : text::words(predicate)) {
        if (text::is_stopword(w)) continue;
        const std::string s = text::stem(w);
        const auto& cues = relation_cues(w);
        std::optional<text::Trigrams> trigrams;
        const auto spelling = [&](const RelationWord& r) {
            if (r.stem_trigrams.packed.empty()) return text::trigram_similarity(s, r.stem);
            if (!trigrams) trigrams = text::trigrams(s);
            return text::trigram_similarity(*trigrams, r.stem_trigrams);
        };
        std::vector<double> row(rel.size(), 0.0);
        for (std::size_t j = 0; j < rel.size(); ++j) {
            double m = 0.0;
            if (s == rel[j].stem) {
                m = 1.0;
            } else {
                for (auto c : cues) {
                    if (std::find(rel[j].cues.begin(), rel[j].cues.end(), c) != rel[j].cues.end()) {
                        m = 0.8;
                        break;
                    }
                }
                if (m == 0.0 && s.size() >= kTrigramStemMin &&
                    rel[j].stem.size() >= kTrigramStemMin) {
                    const double sim = spelling(rel[j]);
                    if (sim >= 0.6) m = 0.6 * sim;
                }
            }
            row[j] = m;
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

// A predicate against the question's relation mentions: per predicate word and mention, the
// best of the mention's words; and per mention, the best of all the predicate's words.
PredicateMatch mention_match(std::string_view predicate, const QuestionRelations& rel) {
    const auto words = predicate_match(predicate, rel.words);
    PredicateMatch out;
    out.best.assign(rel.mentions.size(), 0.0);
    for (const auto& row : words) {
        std::vector<double> by_mention(rel.mentions.size(), 0.0);
        for (std::size_t m = 0; m < rel.mentions.size(); ++m) {
            for (auto w : rel.mentions[m].words) by_mention[m] = std::max(by_mention[m], row[w]);
            out.best[m] = std::max(out.best[m], by_mention[m]);
        }
        out.by_word.push_back(std::move(by_mention));
    }
    return out;
}

}  // namespace glassbox::reasoner::detail
