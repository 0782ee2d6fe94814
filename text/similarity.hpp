// Lexical similarity without a model: cosine of dense vectors, bags of words, word-and-trigram
// profiles, title containment and character-trigram Dice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace glassbox::text {

// Cosine of two vectors (0 when either is zero or their sizes differ).
double cosine(const std::vector<double>& a, const std::vector<double>& b) noexcept;

// A bag of words (for_each_word: lower-cased, UTF-8 beyond ASCII kept as is) with their counts.
using TermCounts = std::unordered_map<std::string, double>;
TermCounts term_counts(std::string_view text);
// Cosine of two bags of words (0 when either is empty).
double cosine(const TermCounts& a, const TermCounts& b) noexcept;

// The distinct words of `text` (as term_counts) that are not stopwords, sorted.
std::vector<std::string> content_words(std::string_view text);
// The share of `title`'s content words that `question_words` (sorted, as content_words gives
// them) contains; 0 for a title without content words.
double title_containment(std::string_view title, const std::vector<std::string>& question_words);

// Words plus the character trigrams of each word padded with '#' (weighted 0.5), so word forms
// ("wear" / "wears", "child" / "children") still overlap: a lexical stand-in for a
// feature-hashing embedding that needs no round trip. Features are 64-bit hashes (words and
// trigrams apart), sorted, each once with its summed weight; norm is their Euclidean length.
struct LexicalProfile {
    std::vector<std::pair<std::uint64_t, double>> features;
    double norm = 0.0;
};
LexicalProfile lexical_profile(std::string_view text);
// Cosine of two lexical profiles (0 when either is empty).
double cosine(const LexicalProfile& a, const LexicalProfile& b) noexcept;

// One question's lexical profile scored against many texts (graph-rag's pre-filter: every edge
// of a subgraph), each text given in parts: cosine(question) is exactly
// cosine(lexical_profile(question), lexical_profile(the parts joined by spaces)), computed without
// a profile per text: its features are summed in a hash table (no sort) and looked up in the
// question's, in buffers reused from text to text. Exact, not approximate: every weight is a
// multiple of 0.5, so every sum and product is exact in any order. Not thread-safe.
class LexicalQuery {
public:
    explicit LexicalQuery(std::string_view question);
    double cosine(std::span<const std::string_view> parts);
    double cosine(std::initializer_list<std::string_view> parts) {
        return cosine(std::span<const std::string_view>(parts.begin(), parts.size()));
    }

private:
    // Open addressing over feature hashes; a slot is in use when its stamp is the table's.
    struct Table {
        std::vector<std::uint64_t> keys;
        std::vector<double> weights;
        std::vector<std::uint32_t> stamps;
        std::uint32_t stamp = 1;
        std::size_t mask = 0;
        void reset(std::size_t at_least);  // empty, with room for `at_least` features
        double& at(std::uint64_t key);     // the weight of `key`, inserted as 0 when new
        double find(std::uint64_t key) const noexcept;  // 0 when absent
    };
    void add_features(std::string_view text);

    Table question_;
    double question_norm_ = 0.0;
    Table text_;
    std::vector<std::size_t> used_;  // the slots of text_ in use, in insertion order
    std::string padded_;
};
// Dice coefficient of the padded character trigrams of the normalised strings, 0..1.
double trigram_similarity(std::string_view a, std::string_view b);

// The padded character trigrams of normalize(s), packed and sorted: what trigram_similarity
// compares, kept for a string compared with many others.
struct Trigrams {
    std::vector<std::uint32_t> packed;
};
Trigrams trigrams(std::string_view s);
// trigram_similarity() of the two strings the trigrams were made from.
double trigram_similarity(const Trigrams& a, const Trigrams& b) noexcept;

}  // namespace glassbox::text
