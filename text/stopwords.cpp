// The stopword list. One list for every worker: the extractive model's question analysis, the
// store's keyword (FTS5) queries and document-rag's title matching all apply it to questions,
// and with BM25 or word overlap a framing word like "name" or "type" is noise in each of them.
#include "text/stopwords.hpp"

#include <unordered_set>

namespace glassbox::text {

bool is_stopword(std::string_view lower_word) noexcept {
    static const std::unordered_set<std::string_view> kStopwords{
        "a",       "about",     "above",    "after",   "again",   "against",    "all",
        "along",   "also",      "although", "am",      "among",   "an",         "and",
        "any",     "anyone",    "anything", "are",     "around",  "as",         "at",
        "be",      "because",   "been",     "before",  "being",   "below",      "besides",
        "between", "both",      "but",      "by",      "called",  "can",        "could",
        "despite", "did",       "do",       "does",    "doing",   "done",       "down",
        "during",  "each",      "either",   "else",    "ever",    "few",        "find",
        "for",     "from",      "further",  "get",     "gets",    "give",       "given",
        "had",     "has",       "have",     "having",  "he",      "her",        "here",
        "hers",    "herself",   "him",      "himself", "his",     "how",        "however",
        "i",       "if",        "in",       "into",    "inverse", "is",         "it",
        "its",     "itself",    "just",     "kind",    "known",   "list",       "many",
        "me",      "more",      "most",     "much",    "my",      "myself",     "name",
        "named",   "neither",   "no",       "nor",     "not",     "of",         "off",
        "on",      "once",      "one",      "only",    "onto",    "or",         "other",
        "our",     "ours",      "out",      "over",    "own",     "per",        "please",
        "s",       "same",      "she",      "should",  "show",    "so",         "some",
        "someone", "something", "sort",     "such",    "t",       "tell",       "than",
        "that",    "the",       "their",    "theirs",  "them",    "themselves", "then",
        "there",   "these",     "they",     "thing",   "things",  "this",       "those",
        "though",  "through",   "to",       "too",     "toward",  "towards",    "type",
        "under",   "until",     "up",       "us",      "very",    "via",        "was",
        "we",      "were",      "what",     "whats",   "when",    "where",      "whether",
        "which",   "while",     "who",      "whom",    "whose",   "why",        "will",
        "with",    "within",    "without",  "would",   "yet",     "you",        "your",
        "yours",   "yourself"};
    return kStopwords.contains(lower_word);
}

}  // namespace glassbox::text
