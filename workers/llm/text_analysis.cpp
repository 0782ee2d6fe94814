// Word splitting, stopwords, stemming, trigrams and the relation-word lexicon.
#include "workers/llm/text_analysis.hpp"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace glassbox::llm::text {

namespace {

bool word_byte(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

const std::unordered_set<std::string_view>& stopwords() {
    static const std::unordered_set<std::string_view> set{
        "a",       "about",     "above",      "after",  "again",   "against",  "all",
        "also",    "am",        "an",         "and",    "any",     "are",      "as",
        "at",      "be",        "because",    "been",   "before",  "being",    "below",
        "between", "both",      "but",        "by",     "can",     "could",    "did",
        "do",      "does",      "doing",      "done",   "down",    "during",   "each",
        "either",  "else",      "ever",       "few",    "for",     "from",     "further",
        "get",     "gets",      "give",       "given",  "had",     "has",      "have",
        "having",  "he",        "her",        "here",   "hers",    "herself",  "him",
        "himself", "his",       "how",        "i",      "if",      "in",       "into",
        "is",      "it",        "its",        "itself", "just",    "list",     "me",
        "more",    "most",      "my",         "myself", "name",    "named",    "no",
        "nor",     "not",       "of",         "off",    "on",      "once",     "one",
        "only",    "or",        "other",      "our",    "ours",    "out",      "over",
        "own",     "please",    "same",       "she",    "should",  "show",     "so",
        "some",    "such",      "tell",       "than",   "that",    "the",      "their",
        "theirs",  "them",      "themselves", "then",   "there",   "these",    "they",
        "this",    "those",     "through",    "to",     "too",     "under",    "until",
        "up",      "us",        "very",       "was",    "we",      "were",     "what",
        "whats",   "when",      "where",      "which",  "while",   "who",      "whom",
        "whose",   "why",       "will",       "with",   "would",   "you",      "your",
        "yours",   "yourself",  "s",          "t",      "inverse", "known",    "called",
        "kind",    "type",      "sort",       "many",   "much",    "find",     "besides",
        "whether", "neither",   "among",      "within", "without", "although", "though",
        "however", "despite",   "along",      "around", "towards", "toward",   "onto",
        "via",     "per",       "yet",        "did",    "does",    "do",       "anyone",
        "someone", "something", "anything",   "thing",  "things"};
    return set;
}

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

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

std::vector<std::string> words(std::string_view s) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < s.size()) {
        if (!word_byte(static_cast<unsigned char>(s[i]))) {
            ++i;
            continue;
        }
        const std::size_t start = i;
        while (i < s.size() && word_byte(static_cast<unsigned char>(s[i]))) ++i;
        std::string w = lower(s.substr(start, i - start));
        // "Arthur's" -> "arthur": the "s" after an apostrophe (ASCII or U+2019) is not a word.
        const bool after_apostrophe = (start >= 1 && s[start - 1] == '\'') ||
                                      (start >= 3 && s.compare(start - 3, 3, "\xE2\x80\x99") == 0);
        if (w == "s" && after_apostrophe) continue;
        out.push_back(std::move(w));
    }
    return out;
}

bool is_stopword(std::string_view lower_word) { return stopwords().contains(lower_word); }

std::string stem(std::string_view w) {
    static const std::unordered_map<std::string_view, std::string_view> irregular{
        {"children", "child"}, {"men", "man"},     {"women", "woman"},  {"people", "person"},
        {"wives", "wife"},     {"born", "birth"},  {"died", "death"},   {"dies", "death"},
        {"die", "death"},      {"dead", "death"},  {"wore", "wear"},    {"worn", "wear"},
        {"won", "win"},        {"wrote", "write"}, {"written", "write"}};
    if (auto it = irregular.find(w); it != irregular.end()) return std::string(it->second);
    std::string s(w);
    const auto ends = [&](std::string_view suffix) {
        return s.size() > suffix.size() + 2 && s.ends_with(suffix);
    };
    if (ends("ies")) {
        s.resize(s.size() - 3);
        s += 'y';
    } else if (ends("sses") || ends("shes") || ends("ches") || ends("xes")) {
        s.resize(s.size() - 2);
    } else if (s.size() > 3 && s.ends_with('s') && !s.ends_with("ss") && !s.ends_with("us") &&
               !s.ends_with("is")) {
        s.pop_back();
    } else if (ends("ing") && s.size() > 5) {
        s.resize(s.size() - 3);
    } else if (ends("ed") && s.size() > 4) {
        s.resize(s.size() - 2);
    }
    // "based"/"base", "aged"/"age", "placed"/"place" meet at the same stem.
    if (s.size() > 3 && s.back() == 'e') s.pop_back();
    return s;
}

std::vector<std::string> content_stems(std::string_view s) {
    std::vector<std::string> out;
    for (const auto& w : words(s))
        if (!is_stopword(w)) out.push_back(stem(w));
    return out;
}

double trigram_similarity(std::string_view a, std::string_view b) {
    const auto grams = [](std::string_view s) {
        std::string padded = "  " + normalize(s) + " ";
        std::vector<std::string> out;
        for (std::size_t i = 0; i + 3 <= padded.size(); ++i) out.push_back(padded.substr(i, 3));
        std::sort(out.begin(), out.end());
        return out;
    };
    const auto ga = grams(a);
    const auto gb = grams(b);
    if (ga.empty() || gb.empty()) return 0.0;
    std::vector<std::string> common;
    std::set_intersection(ga.begin(), ga.end(), gb.begin(), gb.end(), std::back_inserter(common));
    return 2.0 * static_cast<double>(common.size()) / static_cast<double>(ga.size() + gb.size());
}

const std::vector<std::string_view>& relation_cues(std::string_view lower_word) {
    static const std::vector<std::string_view> none;
    const auto& map = lexicon();
    if (auto it = map.find(std::string(lower_word)); it != map.end()) return it->second;
    if (auto it = map.find(stem(lower_word)); it != map.end()) return it->second;
    return none;
}

std::string normalize(std::string_view s) {
    std::string out;
    for (const auto& w : words(s)) {
        if (!out.empty()) out += ' ';
        out += w;
    }
    return out;
}

}  // namespace glassbox::llm::text
