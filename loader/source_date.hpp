// A file's own date, as its statements give it (docs/knowledge.md §3): the date its document
// or file node states with dcterms:modified, schema:dateModified, prov:generatedAtTime,
// dcterms:date or dcterms:issued (preferred in that order), read batch by batch as the file is.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "schema/term.hpp"

namespace glassbox::loader {

class SourceDateFinder {
public:
    // `nodes`: the IRIs that name the file itself (its source IRI, the base of its relative
    // IRIs, so that `<> dcterms:modified "2020-01-01"` names it).
    explicit SourceDateFinder(std::vector<std::string> nodes);

    // Looks for a better date among the batch's statements about the file.
    void scan(std::span<const schema::Triple> batch);

    // The best date found (an xsd:date or xsd:dateTime lexical form); "" when none. A literal
    // that is neither is passed over, not guessed at.
    const std::string& date() const noexcept { return date_; }

private:
    std::vector<std::string> nodes_;
    std::string date_;
    std::size_t rank_;  // of date_'s predicate; kNone while there is none
};

}  // namespace glassbox::loader
