// What the router reads from a question: its words, the entity names it writes, how many
// relations it chains, and what the collection holds of it (docs/query.md §2).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::query {

// A name the question writes, as a label would spell it ("Cruz_Azul_FC" → "Cruz Azul FC"),
// weighted by how surely it is a name: written with underscores 1.0, several capitalised words
// 0.8, one capitalised word 0.4.
struct EntitySpan {
    std::string text;
    double weight = 0.0;
};

// The entity spans of a question, surest first, at most `limit` (no duplicates).
std::vector<EntitySpan> entity_spans(std::string_view question, std::size_t limit = 16);

// The longest chain of relation links ("'s", "of") in the question where the words between two
// links are at most two lower-case ones or one entity written with underscores: "the gender of
// eleanor_of_castile 's kid 's mom" chains 3; "the President of the Republic of China" chains 1
// (a capitalised name between the links is one name, not a relation).
std::size_t relation_chain(std::string_view question);

struct QuestionFeatures {
    std::string question;
    std::size_t words = 0;
    std::size_t relation_chain = 0;
    std::vector<EntitySpan> spans;
    // The collection's signals (known only when the store was asked and answered):
    bool signals_known = false;
    double graph_entities = 0.0;    // summed weight of the spans that are labels in the graph
    double document_keyword = 0.0;  // the best BM25 score of the question over the chunks
};

// Features from the text alone (signals unknown).
QuestionFeatures question_features(std::string_view question);

}  // namespace glassbox::query
