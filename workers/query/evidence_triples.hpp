// The triples of an engine's explain messages the router reads its evidence from, gathered as the
// messages arrive: from JSON trees, or from the text received with a cursor, no tree built.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace glassbox::query {

// One triple, each term as schema::for_each_explain_triple's readers see it: an IRI, a literal's
// text or a blank node's label; "" for anything else.
struct TripleView {
    std::string_view s, p, o;
};

// What the router reads of an explain message besides its triples.
struct ExplainHead {
    std::string session;
    std::string explain_id;
};

// The triples with a predicate read_evidence reads (a selection's type, score, tier, sources,
// reified edge and derivation), in the order they came. The rest of a trace (an Exploration's
// candidates, labels and texts: most of its bytes) is not kept. Holds views into the messages
// added: they must outlive it and stay where they are (a std::deque, not a vector, of them).
class EvidenceTriples {
public:
    // A tree (docs/protocol.md §8, either form of explain_triples): as for_each_explain_triple
    // reads it. Anything not an explain body adds nothing.
    void add(const nlohmann::json& body);

    // The same from the body's text, with its session and explain_id (string_of's: "" when
    // absent). True when the text is one JSON object (checked as nlohmann's parser checks it)
    // in the shape the workers write: then it added what add(parse(text)) would. False for any
    // other text, a valid body in an unusual shape included (a duplicate key, an escaped key, a
    // term or triple not as encoded, an index out of range), having added nothing: the caller
    // parses it and add()s the tree, which gives the answer or the error.
    bool add_text(std::string_view text, ExplainHead& head);

    const std::vector<TripleView>& triples() const noexcept { return triples_; }

private:
    std::vector<TripleView> triples_;
    std::deque<std::string> unescaped_;  // the value of an escaped string a view names
};

}  // namespace glassbox::query
