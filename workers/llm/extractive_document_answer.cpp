// The extractive model's answer from document chunks: sentences split and scored against the
// question, quoted exactly with their chunk markers, and the word count. Deterministic: ties
// broken by input order.
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

using detail::valid_marker_id;
using text::lower;
using text::normalize;

}  // namespace

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
