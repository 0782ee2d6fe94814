// Word splitting (with the possessive rule), the stemmer and normalisation.
#include "text/tokenize.hpp"

#include <unordered_map>

#include "base/ascii.hpp"
#include "text/stopwords.hpp"

namespace glassbox::text {

std::string lower(std::string_view s) { return base::ascii_lower(s); }

namespace {

// for_each_word without a possessive "s": "Arthur's" -> "arthur" (the "s" after an ASCII or
// U+2019 apostrophe is not a word).
template <typename OnWord>
void for_each_normal_word(std::string_view s, OnWord&& on_word) {
    for_each_word(s, [&](std::string_view w, std::size_t start) {
        const bool after_apostrophe = (start >= 1 && s[start - 1] == '\'') ||
                                      (start >= 3 && s.compare(start - 3, 3, "\xE2\x80\x99") == 0);
        if (w == "s" && after_apostrophe) return;
        on_word(w);
    });
}

}  // namespace

std::vector<std::string> words(std::string_view s) {
    std::vector<std::string> out;
    for_each_normal_word(s, [&](std::string_view w) { out.emplace_back(w); });
    return out;
}

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
    } else if (ends("sses") || ends("shes") || ends("ches") || ends("xes") ||
               (ends("ed") && s.size() > 4)) {
        // A sibilant's -es, a past tense's -ed (no word ending in -ed meets the branches below).
        s.resize(s.size() - 2);
    } else if (s.size() > 3 && s.ends_with('s') && !s.ends_with("ss") && !s.ends_with("us") &&
               !s.ends_with("is")) {
        s.pop_back();
    } else if (ends("ing") && s.size() > 5) {
        s.resize(s.size() - 3);
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

void normalize_into(std::string_view s, std::string& out) {
    out.clear();
    for_each_normal_word(s, [&](std::string_view w) {
        if (!out.empty()) out += ' ';
        out += w;
    });
}

std::string normalize(std::string_view s) {
    std::string out;
    normalize_into(s, out);
    return out;
}

bool contains_phrase(std::string_view padded, std::string_view phrase) noexcept {
    for (std::size_t at = padded.find(phrase, 1); at != std::string_view::npos;
         at = padded.find(phrase, at + 1)) {
        const std::size_t end = at + phrase.size();
        if (padded[at - 1] == ' ' && end < padded.size() && padded[end] == ' ') return true;
    }
    return false;
}

}  // namespace glassbox::text
