// A triples-batch reply read with each distinct term decoded once and its labels left in the
// text: graph RAG's traversal takes a few of the thousands of triples a hop's reply holds, whose
// subjects and predicates repeat, and reads a term's label once.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/json_cursor.hpp"
#include "schema/term.hpp"

namespace glassbox::schema {

// What decode_text<TriplesBatchResponse> reads, but each triple as the positions of its terms
// in `terms` (a term written alike twice in the text is there once; one written two ways may be
// there twice) and each label as its string token (TriplesBatchResponse::labels' strings, escaped
// as in the text). The triples' graphs are not kept.
struct TriplesBatchTerms {
    struct TermIndexes {
        std::uint32_t s = 0;
        std::uint32_t p = 0;
        std::uint32_t o = 0;
    };
    std::vector<Term> terms;
    std::vector<std::vector<TermIndexes>> results;
    bool labelled = false;                      // the reply had "labels"
    std::vector<std::vector<JsonText>> labels;  // views of the text (or of `owned`)
    // The labels' strings when the text needed the tree decoder (a reply the fast reader
    // refuses): a deque, so moving this struct or adding to it keeps the views valid.
    std::deque<std::string> owned;
};

// The reply `text` read; the labels are views of it: it must outlive them. The error is
// decode_text<TriplesBatchResponse>'s.
base::Result<TriplesBatchTerms> decode_triples_batch_terms(std::string_view text);

}  // namespace glassbox::schema
