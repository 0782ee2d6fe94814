// The extractive model's methods. Everything here is deterministic: no clocks, no randomness,
// ties broken by input order.
#include "workers/llm/extractive_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "text/similarity.hpp"
#include "text/stopwords.hpp"
#include "text/tokenize.hpp"
#include "workers/llm/relation_cues.hpp"

namespace glassbox::llm {

namespace {

using text::lower;
using text::normalize;

// ---- question analysis ------------------------------------------------------------------------

// One whitespace-separated piece of the question, punctuation stripped.
struct Token {
    std::string text;  // as written, without surrounding punctuation or a possessive 's
    std::string lower;
    std::size_t index = 0;    // position among tokens
    bool possessive = false;  // followed by 's
    bool sentence_initial = false;
    bool break_after = false;  // punctuation or a possessive after it ends a phrase
    bool punct_after = false;  // punctuation after it
    bool underscore = false;
    bool capitalized = false;
    bool all_caps = false;
    bool number = false;
    bool stop = false;
    bool in_entity = false;   // part of an entity mention
    bool appositive = false;  // a type word next to an entity mention ("the club X")
};

struct Candidate {
    std::string text;
    int score = 0;
    std::size_t position = 0;
    bool entity = false;
};

struct QuestionAnalysis {
    std::vector<Token> tokens;
    std::vector<Candidate> candidates;  // sorted, most salient first, distinct
};

bool is_ascii_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_ascii_lower(char c) { return c >= 'a' && c <= 'z'; }

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

// ---- edge scoring -----------------------------------------------------------------------------

// A question word that names a relation (not part of an entity mention).
struct RelationWord {
    std::string surface;
    std::string stem;
    std::vector<std::string_view> cues;
    double weight = 1.0;
};

// The relation words of one key (main cue, else stem) within one segment of the question:
// "other half of spouse of X 's spouse" has three spouse mentions (segments split at "of",
// possessives and punctuation), "the football club that X plays for" one club mention however
// many of its words say "club". A path needs one edge per mention.
struct RelationMention {
    std::string key;
    std::vector<std::size_t> words;  // into the RelationWord list
    double weight = 0.0;
};

struct QuestionRelations {
    std::vector<RelationWord> words;
    std::vector<RelationMention> mentions;
    double total_weight = 0.0;
};

QuestionRelations relation_words(const QuestionAnalysis& a) {
    QuestionRelations out;
    std::size_t segment = 0;
    std::map<std::pair<std::size_t, std::string>, std::size_t> mention_index;
    for (const auto& t : a.tokens) {
        const bool separator = t.lower == "of" || t.lower == "and" || t.lower == "or";
        if (separator) ++segment;
        if (!t.in_entity && !t.number) {
            const auto& token_cues = relation_cues(t.lower);
            // Question words are stopwords, but "where", "when", "why" name a relation.
            if (!(t.stop && token_cues.empty())) {
                for (const auto& w : text::words(t.text)) {
                    if (text::is_stopword(w) && relation_cues(w).empty()) continue;
                    RelationWord r;
                    r.surface = w;
                    r.stem = text::stem(w);
                    r.cues = relation_cues(w);
                    r.weight = t.appositive ? 0.3 : 1.0;
                    std::string key = r.cues.empty() ? r.stem : std::string(r.cues.front());
                    // A type word beside an entity ("the club FC_Porto", "Forward position")
                    // is that entity's own mention: it neither merges with nor stands in for
                    // the clause's relation words.
                    std::size_t where = segment;
                    if (t.appositive) {
                        key = "type:" + key;
                        where = std::numeric_limits<std::size_t>::max() - t.index;
                    }
                    auto [it, inserted] =
                        mention_index.emplace(std::pair{where, key}, out.mentions.size());
                    if (inserted) out.mentions.push_back({key, {}, 0.0});
                    auto& m = out.mentions[it->second];
                    m.words.push_back(out.words.size());
                    m.weight = std::max(m.weight, r.weight);
                    out.words.push_back(std::move(r));
                }
            }
        }
        if (t.break_after) ++segment;
    }
    for (const auto& m : out.mentions) out.total_weight += m.weight;
    return out;
}

// How well each of a predicate's words expresses each relation word: 1 same stem, 0.8 a shared
// cue, up to 0.6 for similar spelling ("nationality"/"national"). Rows: the predicate's content
// words; columns: `rel`.
std::vector<std::vector<double>> predicate_match(std::string_view predicate,
                                                 const std::vector<RelationWord>& rel) {
    std::vector<std::vector<double>> rows;
    for (const auto& w : text::words(predicate)) {
        if (text::is_stopword(w)) continue;
        const std::string s = text::stem(w);
        const auto& cues = relation_cues(w);
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
                if (m == 0.0 && s.size() >= 4 && rel[j].stem.size() >= 4) {
                    const double sim = text::trigram_similarity(s, rel[j].stem);
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
struct PredicateMatch {
    std::vector<std::vector<double>> by_word;
    std::vector<double> best;
};

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

struct Mention {
    std::string normalized;
    double weight = 1.0;
};

// How strongly a node label is one of the question's entity mentions: 1 exact; 0.9 written in
// the question; else a close spelling. Sets `which` to the mention matched, or, for a label
// written in the question but among no mentions, to mentions.size() + own_slot.
double anchor_strength(const std::string& label_norm, const std::vector<Mention>& mentions,
                       const std::string& question_norm, std::size_t own_slot, std::size_t& which) {
    double best = 0.0;
    which = mentions.size();
    if (label_norm.empty()) return 0.0;
    for (std::size_t i = 0; i < mentions.size(); ++i) {
        const auto& m = mentions[i];
        double s = 0.0;
        if (label_norm == m.normalized) {
            s = 1.0;
        } else if (label_norm.size() >= 6 && m.normalized.size() >= 6) {
            const double sim = text::trigram_similarity(label_norm, m.normalized);
            if (sim >= 0.8) s = 0.85 * sim;
        }
        s *= m.weight;
        if (s > best) {
            best = s;
            which = i;
        }
    }
    if (best < 0.9 && label_norm.size() >= 3 && !text::is_stopword(label_norm)) {
        const std::string padded = " " + question_norm + " ";
        if (padded.find(" " + label_norm + " ") != std::string::npos) {
            // Written in the question but not among the mentions: its own mention slot.
            best = 0.9;
            which = mentions.size() + own_slot;
        }
    }
    return best;
}

struct GraphEdge {
    std::size_t from = 0;
    std::size_t to = 0;
    std::size_t predicate = 0;
};

}  // namespace

// ---- public methods ---------------------------------------------------------------------------

std::vector<std::string> ExtractiveModel::extract_concepts(std::string_view question,
                                                           std::size_t limit) const {
    const auto a = analyze_question(question);
    std::vector<std::string> out;
    for (const auto& c : a.candidates) {
        if (out.size() >= limit) break;
        out.push_back(c.text);
    }
    return out;
}

namespace {

// The best anchored path found for an edge: the named entity it starts from and its edges.
struct BestPath {
    std::string start;
    std::vector<std::size_t> edges;
};

// score_edges, also reporting each edge's best path when `paths` is given.
std::vector<double> score_with_paths(std::string_view question,
                                     const std::vector<std::string>& concepts,
                                     const std::vector<LabelledEdge>& edges,
                                     const std::vector<double>* embedding_similarity,
                                     std::vector<BestPath>* paths) {
    const auto analysis = analyze_question(question);
    const auto rel = relation_words(analysis);
    const double rel_total = rel.total_weight;

    // Entity mentions: the question's own, then the caller's concepts (less weight further down).
    std::vector<Mention> mentions;
    std::set<std::string> mention_seen;
    for (const auto& c : analysis.candidates) {
        if (!c.entity) continue;
        auto n = normalize(c.text);
        if (mention_seen.insert(n).second) mentions.push_back({std::move(n), 1.0});
    }
    for (std::size_t i = 0; i < concepts.size(); ++i) {
        auto n = normalize(concepts[i]);
        if (n.empty() || !mention_seen.insert(n).second) continue;
        mentions.push_back({std::move(n), std::max(0.75, 0.95 - 0.03 * static_cast<double>(i))});
    }
    std::string question_norm = normalize(question);

    // Nodes and predicates, each label once.
    std::vector<std::string> node_norms;
    std::vector<std::string> node_labels;  // as first written
    std::unordered_map<std::string, std::size_t> node_index;
    const auto node = [&](const std::string& label) {
        auto n = normalize(label);
        auto [it, inserted] = node_index.emplace(n, node_norms.size());
        if (inserted) {
            node_norms.push_back(std::move(n));
            node_labels.push_back(label);
        }
        return it->second;
    };
    std::vector<PredicateMatch> predicate_matches;
    std::unordered_map<std::string, std::size_t> predicate_index;
    std::vector<GraphEdge> graph;
    graph.reserve(edges.size());
    for (const auto& e : edges) {
        GraphEdge g;
        g.from = node(e.s);
        g.to = node(e.o);
        auto [it, inserted] = predicate_index.emplace(lower(e.p), predicate_matches.size());
        if (inserted) predicate_matches.push_back(mention_match(e.p, rel));
        g.predicate = it->second;
        graph.push_back(g);
    }
    std::vector<double> anchor(node_norms.size(), 0.0);
    std::vector<std::size_t> anchor_mention(node_norms.size(), 0);
    std::set<std::size_t> mentions_present;
    for (std::size_t n = 0; n < node_norms.size(); ++n) {
        anchor[n] = anchor_strength(node_norms[n], mentions, question_norm, n, anchor_mention[n]);
        if (anchor[n] >= 0.8) mentions_present.insert(anchor_mention[n]);
    }
    std::vector<std::vector<std::size_t>> adjacency(node_norms.size());
    for (std::size_t i = 0; i < graph.size(); ++i) {
        adjacency[graph[i].from].push_back(i);
        if (graph[i].to != graph[i].from) adjacency[graph[i].to].push_back(i);
    }

    // A named entity with many edges here (a position, a country) says less about which of
    // them matter than one with few: with two named entities, the rarer one's edges lead.
    std::vector<double> specificity(node_norms.size(), 1.0);
    if (mentions_present.size() > 1) {
        for (std::size_t n = 0; n < node_norms.size(); ++n) {
            const double degree = static_cast<double>(adjacency[n].size());
            specificity[n] = 1.0 / (1.0 + 0.05 * std::log1p(degree));
        }
    }

    std::vector<double> best(edges.size(), 0.0);
    if (paths != nullptr) paths->assign(edges.size(), BestPath{});

    // Paths from each anchor, up to three edges: a path earns the share of the question's
    // relation words its predicates express (each predicate taking each meaning once), loses
    // for edges that neither express a new relation word nor reach another named entity, and
    // gains for every named entity it connects. Each edge keeps its best path's score.
    constexpr std::size_t kMaxDepth = 3;
    constexpr std::size_t kMaxExpansions = 200'000;
    std::size_t expansions = 0;
    std::vector<std::size_t> path_edges;
    std::vector<std::size_t> path_nodes;
    const auto score_path = [&](double start_anchor) {
        const auto& mentions_q = rel.mentions;
        std::vector<bool> taken(mentions_q.size(), false);
        double covered = 0.0;
        std::size_t justified = 0;
        std::set<std::size_t> mentions_on_path;
        mentions_on_path.insert(anchor_mention[path_nodes.front()]);
        for (std::size_t k = 0; k < path_edges.size(); ++k) {
            const auto& match = predicate_matches[graph[path_edges[k]].predicate];
            // Each word of the predicate answers one mention, and an edge takes each relation
            // key once: a spouse edge answers one "spouse"; "plays position" answers "plays"
            // and "position", not also "club". Best pairs first.
            std::vector<std::tuple<double, std::size_t, std::size_t>>
                pairs;  // value, word, mention
            for (std::size_t w = 0; w < match.by_word.size(); ++w) {
                for (std::size_t j = 0; j < mentions_q.size(); ++j) {
                    if (!taken[j] && match.by_word[w][j] > 0.0)
                        pairs.emplace_back(mentions_q[j].weight * match.by_word[w][j], w, j);
                }
            }
            std::stable_sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) {
                return std::get<0>(a) > std::get<0>(b);
            });
            std::set<std::string_view> keys_used;
            std::vector<bool> word_used(match.by_word.size(), false);
            bool took = false;
            for (const auto& [value, w, j] : pairs) {
                if (taken[j] || word_used[w] || keys_used.contains(mentions_q[j].key)) continue;
                taken[j] = true;
                word_used[w] = true;
                keys_used.insert(mentions_q[j].key);
                covered += value;
                took = took || mentions_q[j].weight >= 0.5;
            }
            const std::size_t reached = path_nodes[k + 1];
            bool new_anchor = false;
            if (anchor[reached] >= 0.8)
                new_anchor = mentions_on_path.insert(anchor_mention[reached]).second;
            if (took || new_anchor) ++justified;
        }
        const double coverage = rel_total > 0.0 ? std::min(1.0, covered / rel_total) : 1.0;
        const double efficiency =
            static_cast<double>(justified) / static_cast<double>(path_edges.size());
        const double anchors = mentions_present.empty()
                                   ? 1.0
                                   : static_cast<double>(mentions_on_path.size()) /
                                         static_cast<double>(mentions_present.size());
        const double hops = std::pow(0.92, static_cast<double>(path_edges.size() - 1));
        return start_anchor * (0.25 + 0.75 * coverage) * (0.4 + 0.6 * efficiency) *
               (0.7 + 0.3 * std::min(1.0, anchors)) * hops;
    };
    const auto extend = [&](auto&& self, double start_anchor) -> void {
        const double s = score_path(start_anchor);
        for (auto e : path_edges) {
            if (s <= best[e]) continue;
            best[e] = s;
            if (paths != nullptr)
                (*paths)[e] = BestPath{node_labels[path_nodes.front()], path_edges};
        }
        if (path_edges.size() >= kMaxDepth || ++expansions > kMaxExpansions) return;
        const std::size_t here = path_nodes.back();
        for (auto e : adjacency[here]) {
            const std::size_t next = graph[e].from == here ? graph[e].to : graph[e].from;
            if (std::find(path_nodes.begin(), path_nodes.end(), next) != path_nodes.end()) continue;
            path_edges.push_back(e);
            path_nodes.push_back(next);
            self(self, start_anchor);
            path_edges.pop_back();
            path_nodes.pop_back();
        }
    };
    for (std::size_t n = 0; n < node_norms.size(); ++n) {
        if (anchor[n] < 0.8) continue;
        path_nodes.assign(1, n);
        for (auto e : adjacency[n]) {
            const std::size_t next = graph[e].from == n ? graph[e].to : graph[e].from;
            if (next == n) continue;
            path_edges.assign(1, e);
            path_nodes.assign({n, next});
            extend(extend, anchor[n] * specificity[n]);
        }
    }

    // A floor from the edge's own words against the question, scaled down: all an edge that no
    // anchored path reaches gets.
    std::vector<double> scores(edges.size(), 0.0);
    for (std::size_t i = 0; i < edges.size(); ++i) {
        const auto& match = predicate_matches[graph[i].predicate];
        double covered = 0.0;
        for (std::size_t j = 0; j < rel.mentions.size(); ++j)
            covered += rel.mentions[j].weight * match.best[j];
        const double predicate_share = rel_total > 0.0 ? std::min(1.0, covered / rel_total) : 0.0;
        const double entity = std::max(anchor[graph[i].from], anchor[graph[i].to]);
        const double lexical = 0.2 * predicate_share + 0.2 * entity;
        double score = std::max(best[i], lexical);
        if (embedding_similarity != nullptr && i < embedding_similarity->size()) {
            const double cosine = std::clamp((*embedding_similarity)[i], 0.0, 1.0);
            score = 0.85 * score + 0.15 * cosine;
        }
        score = std::clamp(score, 0.0, 1.0);
        scores[i] = std::round(score * 10'000.0) / 10'000.0;
    }
    return scores;
}

}  // namespace

std::vector<double> ExtractiveModel::score_edges(
    std::string_view question, const std::vector<std::string>& concepts,
    const std::vector<LabelledEdge>& edges, const std::vector<double>* embedding_similarity) const {
    return score_with_paths(question, concepts, edges, embedding_similarity, nullptr);
}

std::vector<std::string> ExtractiveModel::reason_edges(
    std::string_view question, const std::vector<LabelledEdge>& edges) const {
    std::vector<BestPath> paths;
    (void)score_with_paths(question, extract_concepts(question), edges, nullptr, &paths);
    const auto analysis = analyze_question(question);
    const auto rel = relation_words(analysis);
    std::vector<Mention> mentions;
    for (const auto& c : analysis.candidates)
        if (c.entity) mentions.push_back({normalize(c.text), 1.0});
    const std::string question_norm = normalize(question);

    std::vector<std::string> out;
    out.reserve(edges.size());
    for (std::size_t i = 0; i < edges.size(); ++i) {
        const auto& e = edges[i];
        std::vector<std::string> parts;
        std::size_t which = 0;
        const bool subject_named =
            anchor_strength(normalize(e.s), mentions, question_norm, 0, which) >= 0.8;
        const bool object_named =
            anchor_strength(normalize(e.o), mentions, question_norm, 0, which) >= 0.8;
        if (subject_named) parts.push_back("its subject \"" + e.s + "\" is named in the question");
        if (object_named) parts.push_back("its object \"" + e.o + "\" is named in the question");
        // An edge further along a path: where the path starts and the relations it takes.
        const auto& path = paths[i].edges;
        if (!subject_named && !object_named && path.size() >= 2) {
            std::string via;
            for (std::size_t k = 0; k + 1 < path.size() && path[k] != i; ++k)
                via += (via.empty() ? "\"" : ", \"") + edges[path[k]].p + "\"";
            if (!via.empty()) {
                parts.push_back("it is reached from \"" + paths[i].start +
                                "\", named in the question, through " + via);
            }
        }
        const auto rows = predicate_match(e.p, rel.words);
        std::vector<std::string> words;
        for (std::size_t j = 0; j < rel.words.size(); ++j) {
            bool matched = false;
            for (const auto& row : rows) matched = matched || row[j] > 0.0;
            if (matched &&
                std::find(words.begin(), words.end(), rel.words[j].surface) == words.end())
                words.push_back(rel.words[j].surface);
        }
        if (!words.empty()) {
            std::string list;
            for (std::size_t k = 0; k < words.size(); ++k) {
                if (k) list += ", ";
                list += "\"" + words[k] + "\"";
            }
            parts.push_back("its relation \"" + e.p + "\" matches " + list + " in the question");
        }
        std::string reason;
        if (parts.empty()) {
            reason = "\"" + e.s + " " + e.p + " " + e.o +
                     "\" matches no entity or relation word of the question directly; it may "
                     "link entities that do.";
        } else {
            reason = "\"" + e.s + " " + e.p + " " + e.o + "\": ";
            for (std::size_t k = 0; k < parts.size(); ++k) {
                if (k) reason += k + 1 == parts.size() ? " and " : ", ";
                reason += parts[k];
            }
            reason += ".";
        }
        out.push_back(std::move(reason));
    }
    return out;
}

namespace {

bool valid_marker_id(std::string_view id) {
    if (id.empty() || id.size() > 32) return false;
    return std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
    });
}

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

std::vector<std::string> ExtractiveModel::synthesize_from_edges(
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
        return sentences;
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
    return sentences;
}

namespace {

struct Sentence {
    std::size_t chunk = 0;
    std::size_t order = 0;  // within its chunk
    std::string text;
    std::vector<std::string> stems;
};

// True if the line starting at `i` is a Markdown ATX heading: up to three spaces, 1-6 '#',
// then a space or the end of the line.
bool heading_line_at(std::string_view s, std::size_t i) {
    std::size_t k = i;
    while (k < s.size() && k - i < 3 && s[k] == ' ') ++k;
    std::size_t hashes = 0;
    while (k < s.size() && s[k] == '#') ++k, ++hashes;
    if (hashes == 0 || hashes > 6) return false;
    return k == s.size() || s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r';
}

// Sentences of `s`: ends at . ! ? followed by a space and an upper-case letter, digit or quote,
// and at blank lines; "Mr." and single initials do not end one. A Markdown heading line ends the
// sentence before it and is not a sentence itself (a title, not a claim to quote).
std::vector<std::string> split_sentences(std::string_view s) {
    static const std::unordered_set<std::string_view> abbreviations{
        "mr",  "mrs", "ms",  "dr",  "st",   "jr",     "sr",   "vs", "etc",
        "inc", "ltd", "co",  "no",  "prof", "gen",    "col",  "lt", "sgt",
        "mt",  "ft",  "u.s", "e.g", "i.e",  "approx", "dept", "est"};
    std::vector<std::string> out;
    std::size_t start = 0;
    const auto push = [&](std::size_t end) {
        std::string_view piece = s.substr(start, end - start);
        while (!piece.empty() && std::isspace(static_cast<unsigned char>(piece.front())))
            piece.remove_prefix(1);
        while (!piece.empty() && std::isspace(static_cast<unsigned char>(piece.back())))
            piece.remove_suffix(1);
        if (!piece.empty()) out.emplace_back(piece);
        start = end;
    };
    for (std::size_t i = 0; i < s.size(); ++i) {
        if ((i == 0 || s[i - 1] == '\n') && heading_line_at(s, i)) {
            push(i);
            const auto eol = s.find('\n', i);
            i = eol == std::string_view::npos ? s.size() : eol;
            start = i;
            continue;
        }
        const char c = s[i];
        if (c == '\n' && i + 1 < s.size() && s[i + 1] == '\n') {
            push(i);
            continue;
        }
        if (c != '.' && c != '!' && c != '?') continue;
        std::size_t j = i + 1;
        while (j < s.size() && (s[j] == '"' || s[j] == '\'' || s[j] == ')')) ++j;
        if (j >= s.size()) continue;
        if (!std::isspace(static_cast<unsigned char>(s[j]))) continue;
        std::size_t k = j;
        while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
        if (k >= s.size()) continue;
        const unsigned char next = static_cast<unsigned char>(s[k]);
        if (!(std::isupper(next) || std::isdigit(next) || next == '"' || next >= 0x80)) continue;
        if (c == '.') {
            std::size_t w = i;
            while (w > 0 && (std::isalpha(static_cast<unsigned char>(s[w - 1])) || s[w - 1] == '.'))
                --w;
            const std::string word = lower(s.substr(w, i - w));
            if (word.size() == 1 && std::isupper(static_cast<unsigned char>(s[w])))
                continue;  // "J. Smith"
            if (abbreviations.contains(word)) continue;
        }
        push(j);
    }
    push(s.size());
    return out;
}

}  // namespace

std::vector<std::string> ExtractiveModel::synthesize_from_chunks(
    std::string_view question, const std::vector<TextChunk>& chunks) const {
    constexpr std::size_t kMaxSentences = 4;
    std::vector<Sentence> sentences;
    for (std::size_t c = 0; c < chunks.size(); ++c) {
        if (!valid_marker_id(chunks[c].id)) continue;
        const auto pieces = split_sentences(chunks[c].text);
        for (std::size_t k = 0; k < pieces.size(); ++k)
            sentences.push_back({c, k, pieces[k], text::content_stems(pieces[k])});
    }
    if (sentences.empty()) return {"The documents given hold no text for this question."};

    // Inverse document frequency of each stem over the candidate sentences.
    std::unordered_map<std::string, std::size_t> df;
    for (const auto& s : sentences) {
        std::set<std::string> unique(s.stems.begin(), s.stems.end());
        for (const auto& w : unique) ++df[w];
    }
    const double n = static_cast<double>(sentences.size());
    const auto idf = [&](const std::string& w) {
        const auto it = df.find(w);
        const double d = it == df.end() ? 0.0 : static_cast<double>(it->second);
        return std::log(1.0 + (n + 1.0) / (d + 0.5));
    };
    std::vector<std::string> q = text::content_stems(question);
    std::sort(q.begin(), q.end());
    q.erase(std::unique(q.begin(), q.end()), q.end());
    double q_total = 0.0;
    for (const auto& w : q) q_total += idf(w);
    std::set<std::pair<std::string, std::string>> q_bigrams;
    const auto qs = text::content_stems(question);
    for (std::size_t i = 0; i + 1 < qs.size(); ++i) q_bigrams.insert({qs[i], qs[i + 1]});

    std::vector<double> score(sentences.size(), 0.0);
    for (std::size_t i = 0; i < sentences.size(); ++i) {
        const auto& s = sentences[i];
        std::set<std::string> have(s.stems.begin(), s.stems.end());
        double matched = 0.0;
        for (const auto& w : q)
            if (have.contains(w)) matched += idf(w);
        double bigrams = 0.0;
        for (std::size_t k = 0; k + 1 < s.stems.size(); ++k)
            if (q_bigrams.contains({s.stems[k], s.stems[k + 1]})) bigrams += 1.0;
        const auto title = text::content_stems(chunks[s.chunk].title);
        double title_hits = 0.0;
        for (const auto& w : title)
            if (std::binary_search(q.begin(), q.end(), w)) title_hits += 1.0;
        score[i] = (q_total > 0.0 ? matched / q_total : 0.0) + 0.05 * std::min(3.0, bigrams) +
                   0.03 * std::min(2.0, title_hits) + (s.order == 0 ? 0.02 : 0.0) +
                   0.02 * (1.0 - static_cast<double>(s.chunk) / static_cast<double>(chunks.size()));
    }

    // Best first; after each pick, sentences of the same chunk count a little less (so a
    // comparison question gets both documents) and near-repeats are skipped.
    std::vector<bool> used(sentences.size(), false);
    std::vector<std::size_t> picked;
    std::vector<double> current = score;
    while (picked.size() < kMaxSentences) {
        std::size_t best = sentences.size();
        for (std::size_t i = 0; i < sentences.size(); ++i) {
            if (used[i]) continue;
            if (best == sentences.size() || current[i] > current[best]) best = i;
        }
        if (best == sentences.size()) break;
        used[best] = true;
        if (!picked.empty() &&
            (current[best] <= 0.05 || current[best] < 0.35 * score[picked.front()]))
            break;
        bool repeat = false;
        for (auto p : picked) {
            std::set<std::string> a(sentences[p].stems.begin(), sentences[p].stems.end());
            std::set<std::string> b(sentences[best].stems.begin(), sentences[best].stems.end());
            std::size_t common = 0;
            for (const auto& w : b) common += a.contains(w) ? 1 : 0;
            const std::size_t all = a.size() + b.size() - common;
            if (all > 0 && static_cast<double>(common) / static_cast<double>(all) > 0.8)
                repeat = true;
        }
        if (repeat) continue;
        picked.push_back(best);
        // Bridging: a picked sentence that names another chunk's title ("... shot in Leland,
        // such as Maximum Overdrive") makes that chunk's sentences, its first above all, the
        // likely next step; words the picked sentence adds to the question count a little.
        const std::string picked_norm = " " + normalize(sentences[best].text) + " ";
        std::set<std::string> q_set(q.begin(), q.end());
        std::set<std::string> added;
        for (const auto& w : sentences[best].stems)
            if (!q_set.contains(w)) added.insert(w);
        for (std::size_t i = 0; i < sentences.size(); ++i) {
            if (used[i]) continue;
            if (sentences[i].chunk == sentences[best].chunk) {
                current[i] *= 0.85;
                continue;
            }
            const std::string title = normalize(chunks[sentences[i].chunk].title);
            if (title.size() >= 3 && picked_norm.find(" " + title + " ") != std::string::npos)
                current[i] += sentences[i].order == 0 ? 0.3 : 0.1;
            if (!added.empty()) {
                std::size_t shared = 0;
                for (const auto& w :
                     std::set<std::string>(sentences[i].stems.begin(), sentences[i].stems.end()))
                    shared += added.contains(w) ? 1 : 0;
                current[i] += 0.1 * std::min(1.0, static_cast<double>(shared) / 3.0);
            }
        }
    }
    std::vector<std::string> out;
    for (auto p : picked)
        out.push_back(sentences[p].text + " [" + chunks[sentences[p].chunk].id + "]");
    return out;
}

std::size_t count_words(std::string_view s) {
    std::size_t count = 0;
    bool in_word = false;
    for (char c : s) {
        const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
        if (!space && !in_word) ++count;
        in_word = !space;
    }
    return count;
}

}  // namespace glassbox::llm
