// The extractive model's answers: sentences from edges, quoted sentences from chunks, and the
// word count. Deterministic: ties broken by input order.
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
using text::lower;
using text::normalize;

}  // namespace

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

ComposedAnswer ExtractiveModel::answer_from_chunks(
    std::string_view question, const std::vector<TextChunk>& chunks) const {
    constexpr std::size_t kMaxSentences = 4;
    std::vector<Sentence> sentences;
    for (std::size_t c = 0; c < chunks.size(); ++c) {
        if (!valid_marker_id(chunks[c].id)) continue;
        const auto pieces = split_sentences(chunks[c].text);
        for (std::size_t k = 0; k < pieces.size(); ++k)
            sentences.push_back({c, k, pieces[k], text::content_stems(pieces[k])});
    }
    if (sentences.empty()) return {{}, {}, {"The documents given hold no text for this question."}};

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
        const std::string picked_norm = std::string(" ").append(normalize(sentences[best].text)).append(" ");
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
    return {{}, {}, std::move(out)};
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
