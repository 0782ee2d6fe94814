// Citation markers in synthesised answers: strips `[e3][e7]` from streamed text and turns them
// into answer spans (Unicode code points) → the cited edge or chunk ids.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::rag {

// Characters [start, end) of the stripped answer (code points) and the known ids cited there.
struct CitedSpan {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    std::vector<std::string> ids;  // distinct, in the order the markers named them
    bool operator==(const CitedSpan&) const = default;
};

// True if `id` has the marker syntax `[A-Za-z0-9_-]{1,32}`.
bool is_marker_id(std::string_view id) noexcept;

// Streaming marker stripper. A marker is `[ID]` (also `[ID, ID]`), ID a marker id. The answer
// text an LLM streams is fed piece by piece; each feed returns the text that is safe to show
// now: a possible marker cut between two pieces, and the whitespace before it, are held back
// until the next piece (or finish()) decides. Markers are removed together with the whitespace
// before them ("Mexico [e3]." → "Mexico."), so the shown text never needs taking back.
//
// What is a marker: a bracket group whose ids are all `known` or all look like ids of this
// chain (`id_prefix` followed by digits, e.g. "e12"). Other brackets ("[sic]", "[1]") stay text.
// Unknown ids are stripped but never cited. A claim is the text from the end of the previous
// claim or the start of the sentence, whichever is later, up to the marker (leading whitespace
// excluded); several marker groups right after one another cite the same claim.
class MarkerStripper {
public:
    MarkerStripper(std::function<bool(std::string_view)> known, std::string id_prefix);

    // Text of this piece (and of held-back text) that can be shown now.
    std::string feed(std::string_view piece);
    // Flushes whatever is held back; call once after the last piece.
    std::string finish();

    // The stripped answer so far (everything returned by feed and finish).
    const std::string& text() const noexcept { return text_; }
    // Every citation, in answer order; spans are non-empty and lie within text().
    const std::vector<CitedSpan>& citations() const noexcept { return citations_; }

private:
    enum class Scan { kMarker, kText, kNeedMore };
    // Looks at `pending_` from `at` (a '['): a complete marker group (its end and ids), plain
    // text, or undecided until more text arrives.
    Scan scan_group(std::size_t at, std::size_t& end, std::vector<std::string>& ids) const;
    void emit(std::string_view text);
    void cite(const std::vector<std::string>& ids);
    std::string drain(bool final);

    std::function<bool(std::string_view)> known_;
    std::string id_prefix_;
    std::string pending_;  // not yet decided: starts at whitespace or '['
    std::string text_;     // the stripped answer
    std::uint64_t code_points_ = 0;
    std::uint64_t claim_floor_ = 0;  // a claim never starts before this (end of the last one)
    std::uint64_t sentence_start_ = 0;
    std::uint64_t claim_start_ = 0;  // start of the claim the current marker run cites
    bool last_was_marker_ = false;   // nothing but markers (and whitespace) since the last claim
    std::vector<CitedSpan> citations_;
};

// Strips a whole text at once: the answer and its citations.
struct StrippedAnswer {
    std::string text;
    std::vector<CitedSpan> citations;
};
StrippedAnswer strip_markers(std::string_view text,
                             const std::function<bool(std::string_view)>& known,
                             std::string_view id_prefix);

}  // namespace glassbox::rag
