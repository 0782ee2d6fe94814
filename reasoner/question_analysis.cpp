// The extractive model's question analysis: tokens, entity mentions and concepts
// (extract_concepts). Deterministic: ties broken by input order.
#include "workers/llm/extractive_question.hpp"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "text/stopwords.hpp"
#include "text/tokenize.hpp"
#include "workers/llm/extractive_model.hpp"
#include "workers/llm/relation_cues.hpp"

namespace glassbox::llm {

namespace detail {

namespace {

using text::lower;
using text::normalize;

bool strip_possessive(std::string& s) {
    for (std::string_view suffix :
         {std::string_view("'s"), std::string_view("\xE2\x80\x99s"), std::string_view("'S")}) {
        if (s.size() > suffix.size() && s.ends_with(suffix)) {
            s.resize(s.size() - suffix.size());
            return true;
        }
    }
    if (s.size() > 1 && (s.back() == '\'')) {  // "players'"
        s.pop_back();
        return true;
    }
    return false;
}

bool punctuation_byte(std::string_view s, std::size_t i, bool leading) {
    const char c = s[i];
    if (leading) return std::string_view("\"'([{<*").find(c) != std::string_view::npos;
    return std::string_view("\"'?!.,;:)]}>*").find(c) != std::string_view::npos;
}

// Curly quotes and other 3-byte punctuation (U+2018/2019/201C/201D, U+2026) at either end.
bool strip_unicode_punct_front(std::string& s) {
    for (std::string_view p : {"\xE2\x80\x9C", "\xE2\x80\x9D", "\xE2\x80\x98", "\xE2\x80\x99"}) {
        if (s.starts_with(p)) {
            s.erase(0, p.size());
            return true;
        }
    }
    return false;
}
bool strip_unicode_punct_back(std::string& s) {
    for (std::string_view p :
         {"\xE2\x80\x9C", "\xE2\x80\x9D", "\xE2\x80\x98", "\xE2\x80\x99", "\xE2\x80\xA6"}) {
        if (s.ends_with(p)) {
            s.resize(s.size() - p.size());
            return true;
        }
    }
    return false;
}

const std::unordered_set<std::string_view>& connectors() {
    static const std::unordered_set<std::string_view> set{
        "of", "de", "the", "and", "von", "van", "der", "den",  "da", "del",  "di",
        "du", "la", "le",  "y",   "des", "for", "on",  "upon", "&",  "from", "to"};
    return set;
}

// Nouns that name a type when written next to an entity: "the club Chelsea_FC".
const std::unordered_set<std::string_view>& type_nouns() {
    static const std::unordered_set<std::string_view> set{
        "position", "club",    "team",     "player",     "country",      "city",        "town",
        "company",  "band",    "film",     "movie",      "album",        "song",        "book",
        "novel",    "river",   "mountain", "university", "school",       "family",      "province",
        "state",    "county",  "region",   "soccer",     "football",     "singer",      "actor",
        "actress",  "writer",  "author",   "magazine",   "newspaper",    "show",        "series",
        "game",     "village", "island",   "lake",       "organization", "organisation"};
    return set;
}

std::vector<Token> tokenize_question(std::string_view question) {
    std::vector<Token> tokens;
    bool next_initial = true;
    std::size_t pos = 0;
    while (pos < question.size()) {
        while (pos < question.size() && std::isspace(static_cast<unsigned char>(question[pos])))
            ++pos;
        if (pos >= question.size()) break;
        std::size_t end = pos;
        while (end < question.size() && !std::isspace(static_cast<unsigned char>(question[end])))
            ++end;
        std::string piece(question.substr(pos, end - pos));
        pos = end;

        if (piece == "'s" || piece == "\xE2\x80\x99s" || piece == "'") {
            if (!tokens.empty()) {
                tokens.back().possessive = true;
                tokens.back().break_after = true;
            }
            continue;
        }
        bool changed = true;
        while (changed && !piece.empty()) {
            changed = false;
            if (punctuation_byte(piece, 0, true)) {
                piece.erase(0, 1);
                changed = true;
            } else if (strip_unicode_punct_front(piece)) {
                changed = true;
            }
        }
        bool possessive = false;
        bool trailing_break = false;
        bool sentence_end = false;
        changed = true;
        while (changed && !piece.empty()) {
            changed = false;
            const char last = piece.back();
            // An initial ("E. B. White") is part of a name, not the end of a sentence.
            if (last == '.' && piece.size() == 2 && is_ascii_upper(piece.front())) break;
            // "f(x)" keeps its closing parenthesis.
            if (last == ')' && piece.find('(') != std::string::npos) break;
            if (punctuation_byte(piece, piece.size() - 1, false)) {
                if (last == '.' || last == '?' || last == '!') sentence_end = true;
                if (last != '\'' && last != '"') trailing_break = true;
                // "1._FC_Nuernberg" keeps its inner dot; only a final one is punctuation.
                piece.pop_back();
                changed = true;
            } else if (strip_unicode_punct_back(piece)) {
                changed = true;
            } else if (!possessive && strip_possessive(piece)) {
                possessive = true;
                changed = true;
            }
        }
        if (piece.empty()) {
            if (!tokens.empty()) {
                tokens.back().break_after = true;
                tokens.back().punct_after = true;
            }
            if (sentence_end) next_initial = true;
            continue;
        }
        Token t;
        t.text = piece;
        t.lower = lower(piece);
        t.index = tokens.size();
        t.possessive = possessive;
        t.sentence_initial = next_initial;
        t.break_after = trailing_break || possessive;
        t.punct_after = trailing_break;
        t.underscore = piece.find('_') != std::string::npos;
        t.capitalized = is_ascii_upper(piece.front());
        std::size_t letters = 0;
        bool lower_seen = false;
        bool digit_seen = false;
        bool other_seen = false;
        for (char c : piece) {
            if (is_ascii_upper(c))
                ++letters;
            else if (is_ascii_lower(c))
                lower_seen = true;
            else if (c >= '0' && c <= '9')
                digit_seen = true;
            else if (c != '.' && c != ',' && c != '-')
                other_seen = true;
        }
        t.all_caps = letters >= 2 && !lower_seen;
        t.number = digit_seen && letters == 0 && !lower_seen && !other_seen;
        t.stop = text::is_stopword(t.lower);
        next_initial = sentence_end;
        tokens.push_back(std::move(t));
    }
    return tokens;
}

void add_candidate(std::vector<Candidate>& out, std::string text, int score, std::size_t position,
                   bool entity) {
    if (normalize(text).empty()) return;
    out.push_back({std::move(text), score, position, entity});
}

std::string join_tokens(const std::vector<Token>& tokens, std::size_t begin, std::size_t end) {
    std::string out;
    for (std::size_t i = begin; i < end; ++i) {
        if (!out.empty()) out += ' ';
        out += tokens[i].text;
    }
    return out;
}

}  // namespace

QuestionAnalysis analyze_question(std::string_view question) {
    QuestionAnalysis a;
    a.tokens = tokenize_question(question);
    auto& tokens = a.tokens;
    std::vector<Candidate> found;

    // Quoted strings, as written.
    for (const auto& [open, close] : {std::pair<std::string_view, std::string_view>{"\"", "\""},
                                      {"\xE2\x80\x9C", "\xE2\x80\x9D"}}) {
        std::size_t from = 0;
        while (true) {
            const std::size_t start = question.find(open, from);
            if (start == std::string_view::npos) break;
            const std::size_t stop = question.find(close, start + open.size());
            if (stop == std::string_view::npos) break;
            std::string inner(question.substr(start + open.size(), stop - start - open.size()));
            if (!inner.empty() && inner.size() <= 200) {
                std::replace(inner.begin(), inner.end(), '_', ' ');
                add_candidate(found, inner, 95, start, true);
            }
            from = stop + close.size();
        }
    }

    // Underscore-joined names: "Cruz_Azul_FC" -> "Cruz Azul FC".
    for (auto& t : tokens) {
        if (!t.underscore) continue;
        std::string name = t.text;
        std::replace(name.begin(), name.end(), '_', ' ');
        add_candidate(found, name, 100, t.index, true);
        t.in_entity = true;
    }

    // Capitalised spans ("New England Revolution", "Arthur's Magazine"), all-caps words.
    for (std::size_t i = 0; i < tokens.size();) {
        const auto starts = [&](const Token& t) {
            return !t.underscore && !t.in_entity && (t.capitalized || t.all_caps) &&
                   !(t.sentence_initial && t.stop);
        };
        if (!starts(tokens[i])) {
            ++i;
            continue;
        }
        std::size_t end = i + 1;
        while (end < tokens.size() && !tokens[end - 1].punct_after) {
            const Token& t = tokens[end];
            if (t.underscore) break;
            // "Arthur's Magazine" goes on past the possessive; "Henry's wife" ends there.
            if (tokens[end - 1].possessive && !(t.capitalized || t.all_caps)) break;
            if (t.capitalized || t.all_caps || (t.number && end > i)) {
                ++end;
                continue;
            }
            // "Bank of America", "Welcome to the Show": up to two connectors, only between
            // capitalised words.
            std::size_t after = end;
            while (after < tokens.size() && after - end < 2 &&
                   connectors().contains(tokens[after].lower) && !tokens[after].break_after)
                ++after;
            if (after > end && after < tokens.size() &&
                (tokens[after].capitalized || tokens[after].all_caps) &&
                !tokens[after].underscore) {
                end = after + 1;
                continue;
            }
            break;
        }
        // "Mark King and Nick Hexum": two names. The whole span stays as a weaker
        // candidate for titles like "In Love and War".
        for (std::size_t k = i + 1; k + 1 < end; ++k) {
            if (tokens[k].lower == "and" || tokens[k].lower == "or") {
                add_candidate(found, join_tokens(tokens, i, end), 75, i, true);
                end = k;  // the left part here; the right part starts its own span
                break;
            }
        }
        const std::size_t length = end - i;
        int score = 0;
        if (length >= 2) {
            score = 90;
        } else if (tokens[i].all_caps) {
            score = 85;
        } else if (!tokens[i].sentence_initial) {
            score = 85;
        } else if (!tokens[i].stop && relation_cues(tokens[i].lower).empty()) {
            score = 60;  // "Paris is ...": a capital at the start may be a name
        }
        if (score > 0) {
            // A possessive inside the span: the span as written and its owner alone.
            std::string as_written;
            for (std::size_t k = i; k < end; ++k) {
                if (!as_written.empty()) as_written += ' ';
                as_written += tokens[k].text;
                if (tokens[k].possessive && k + 1 < end) as_written += "'s";
            }
            add_candidate(found, as_written, score, i, true);
            for (std::size_t k = i; k + 1 < end; ++k) {
                if (tokens[k].possessive)
                    add_candidate(found, join_tokens(tokens, i, k + 1), score - 2, i, true);
            }
            for (std::size_t k = i; k < end; ++k) tokens[k].in_entity = true;
        }
        i = end;
    }

    // Possessive owners written in lower case: "khufu 's children".
    for (auto& t : tokens) {
        if (t.possessive && !t.in_entity && !t.stop && !t.number &&
            relation_cues(t.lower).empty()) {
            add_candidate(found, t.text, 80, t.index, true);
            t.in_entity = true;
        }
    }

    // Numbers.
    for (auto& t : tokens) {
        if (t.number && !t.in_entity) {
            add_candidate(found, t.text, 70, t.index, false);
            t.in_entity = true;
        }
    }

    // Type words next to an entity ("the soccer team Cruz_Azul_FC", "Forward position").
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (!tokens[i].in_entity) continue;
        for (std::size_t k = i; k > 0; --k) {
            Token& before = tokens[k - 1];
            if (before.in_entity || before.stop || before.break_after || before.possessive) break;
            before.appositive = true;
        }
        if (i + 1 < tokens.size() && !tokens[i].break_after) {
            Token& after = tokens[i + 1];
            if (!after.in_entity && type_nouns().contains(after.lower)) after.appositive = true;
        }
    }

    // Content-word phrases and words.
    for (std::size_t i = 0; i < tokens.size();) {
        const auto content = [&](const Token& t) { return !t.in_entity && !t.stop && !t.number; };
        if (!content(tokens[i])) {
            ++i;
            continue;
        }
        std::size_t end = i + 1;
        while (end < tokens.size() && !tokens[end - 1].break_after && content(tokens[end])) ++end;
        const std::size_t length = end - i;
        if (length >= 2 && length <= 4) {
            add_candidate(found, join_tokens(tokens, i, end), 50 + 5 * static_cast<int>(length), i,
                          false);
        }
        for (std::size_t k = i; k < end; ++k) {
            const bool relation = !relation_cues(tokens[k].lower).empty();
            const int score =
                (length == 1 ? 55 : 40) + (relation ? 3 : 0) - (tokens[k].appositive ? 10 : 0);
            add_candidate(found, tokens[k].text, score, k, false);
        }
        i = end;
    }

    std::stable_sort(found.begin(), found.end(), [](const Candidate& x, const Candidate& y) {
        if (x.score != y.score) return x.score > y.score;
        return x.position < y.position;
    });
    std::set<std::string> seen;
    for (auto& c : found) {
        if (seen.insert(normalize(c.text)).second) a.candidates.push_back(std::move(c));
    }
    return a;
}

}  // namespace detail

std::vector<std::string> ExtractiveModel::extract_concepts(std::string_view question,
                                                           std::size_t limit) const {
    const auto a = detail::analyze_question(question);
    std::vector<std::string> out;
    for (const auto& c : a.candidates) {
        if (out.size() >= limit) break;
        out.push_back(c.text);
    }
    return out;
}

}  // namespace glassbox::llm
