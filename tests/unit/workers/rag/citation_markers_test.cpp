// Citation markers: stripping, claim spans, markers cut between stream pieces, unknown ids,
// Unicode.
#include "workers/rag/citation_markers.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace glassbox::rag {
namespace {

// Ids e1..e<n> exist.
std::function<bool(std::string_view)> edges_up_to(int n) {
    return [n](std::string_view id) {
        for (int i = 1; i <= n; ++i) {
            if (id == "e" + std::to_string(i)) return true;
        }
        return false;
    };
}

// The code points [start, end) of `text`.
std::string slice(const std::string& text, std::uint64_t start, std::uint64_t end) {
    std::string out;
    std::uint64_t index = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const bool starts = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
        if (starts && i > 0) ++index;
        if (index >= start && index < end) out.push_back(text[i]);
    }
    return out;
}

// The text of claim `i` of `answer`: its span of code points.
std::string claim(const StrippedAnswer& answer, std::size_t i) {
    return slice(answer.text, answer.citations[i].start, answer.citations[i].end);
}

// The text of every claim of `answer`, in order.
std::vector<std::string> claims(const StrippedAnswer& answer) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < answer.citations.size(); ++i) out.push_back(claim(answer, i));
    return out;
}

TEST(MarkerId, FollowsTheContractSyntax) {
    EXPECT_TRUE(is_marker_id("e3"));
    EXPECT_TRUE(is_marker_id("c_12-a"));
    EXPECT_TRUE(is_marker_id(std::string(32, 'x')));
    EXPECT_FALSE(is_marker_id(std::string(33, 'x')));
    EXPECT_FALSE(is_marker_id(""));
    EXPECT_FALSE(is_marker_id("e 3"));
    EXPECT_FALSE(is_marker_id("é1"));
}

TEST(StripMarkers, RemovesMarkersWithTheSpaceBeforeThemAndCitesTheClaim) {
    const auto out = strip_markers("Cruz Azul FC is in Mexico [e3][e7].", edges_up_to(9), "e");
    EXPECT_EQ(out.text, "Cruz Azul FC is in Mexico.");
    ASSERT_EQ(out.citations.size(), 1u);
    EXPECT_EQ(out.citations[0].start, 0u);
    EXPECT_EQ(out.citations[0].end, 25u);
    EXPECT_EQ(claim(out, 0), "Cruz Azul FC is in Mexico");
    EXPECT_EQ(out.citations[0].ids, (std::vector<std::string>{"e3", "e7"}));
}

TEST(StripMarkers, EachSentenceIsItsOwnClaim) {
    const auto out = strip_markers("A is B [e1]. C is D [e2]. E is F.[e1]", edges_up_to(2), "e");
    EXPECT_EQ(out.text, "A is B. C is D. E is F.");
    ASSERT_EQ(claims(out), (std::vector<std::string>{"A is B", "C is D", "E is F."}));
    EXPECT_EQ(out.citations[1].ids, std::vector<std::string>{"e2"});
}

TEST(StripMarkers, TwoClaimsInOneSentenceSplitAtTheFirstMarker) {
    const auto out = strip_markers("X plays for Y [e1] and Y is in Z [e2].", edges_up_to(2), "e");
    EXPECT_EQ(out.text, "X plays for Y and Y is in Z.");
    EXPECT_EQ(claims(out), (std::vector<std::string>{"X plays for Y", "and Y is in Z"}));
}

TEST(StripMarkers, CommaListsAndDuplicatesCiteEachIdOnce) {
    const auto out = strip_markers("Both hold [e2, e1][e2].", edges_up_to(2), "e");
    EXPECT_EQ(out.text, "Both hold.");
    ASSERT_EQ(out.citations.size(), 1u);
    EXPECT_EQ(out.citations[0].ids, (std::vector<std::string>{"e2", "e1"}));
}

TEST(StripMarkers, UnknownIdsAreStrippedButNeverCited) {
    const auto out = strip_markers("Fact one [e99]. Fact two [e99][e2].", edges_up_to(2), "e");
    EXPECT_EQ(out.text, "Fact one. Fact two.");
    ASSERT_EQ(out.citations.size(), 1u);
    EXPECT_EQ(out.citations[0].ids, std::vector<std::string>{"e2"});
    EXPECT_EQ(claim(out, 0), "Fact two");
}

TEST(StripMarkers, OtherBracketsStayText) {
    const auto out = strip_markers("He said [sic] it [1] twice [a b] [e1].", edges_up_to(1), "e");
    EXPECT_EQ(out.text, "He said [sic] it [1] twice [a b].");
    ASSERT_EQ(out.citations.size(), 1u);
    EXPECT_EQ(out.citations[0].ids, std::vector<std::string>{"e1"});
}

TEST(StripMarkers, AMarkerWithNothingBeforeItCitesNothing) {
    const auto out = strip_markers("[e1] Then text.", edges_up_to(1), "e");
    EXPECT_EQ(out.text, " Then text.");
    EXPECT_TRUE(out.citations.empty());
}

TEST(StripMarkers, SpansCountUnicodeCodePoints) {
    const auto out = strip_markers("Zürich liegt in der Schweiz [e1]. 東京は日本にある [e2].",
                                   edges_up_to(2), "e");
    EXPECT_EQ(out.text, "Zürich liegt in der Schweiz. 東京は日本にある.");
    ASSERT_EQ(out.citations.size(), 2u);
    EXPECT_EQ(out.citations[0].start, 0u);
    EXPECT_EQ(out.citations[0].end, 27u);  // "Zürich liegt in der Schweiz" is 27 code points
    EXPECT_EQ(out.citations[1].start, 29u);
    EXPECT_EQ(out.citations[1].end, 37u);
    EXPECT_EQ(claim(out, 1), "東京は日本にある");
}

TEST(StripMarkers, AnUnclosedBracketAtTheEndIsText) {
    const auto out = strip_markers("Ends with [e1", edges_up_to(1), "e");
    EXPECT_EQ(out.text, "Ends with [e1");
    EXPECT_TRUE(out.citations.empty());
}

TEST(MarkerStripper, StreamedPiecesNeverShowAMarkerAndAddUpToTheWholeResult) {
    const std::string answer =
        "Cruz Azul FC is in Mexico [e3][e7]. Its coach is Über Trainer [e1, e2]. Unknown [e42] and "
        "[note] stays.\nNew line claim [e2]";
    const auto whole = strip_markers(answer, edges_up_to(7), "e");
    for (std::size_t piece = 1; piece <= 7; ++piece) {
        MarkerStripper stripper(edges_up_to(7), "e");
        std::string shown;
        // Cut at byte positions, but never inside a UTF-8 character (as an LLM stream would).
        std::size_t at = 0;
        while (at < answer.size()) {
            std::size_t end = std::min(answer.size(), at + piece);
            while (end < answer.size() && (static_cast<unsigned char>(answer[end]) & 0xC0) == 0x80)
                ++end;
            const auto out = stripper.feed(std::string_view(answer).substr(at, end - at));
            EXPECT_EQ(out.find("[e"), std::string::npos) << "piece size " << piece << ": " << out;
            shown += out;
            at = end;
        }
        shown += stripper.finish();
        EXPECT_EQ(shown, whole.text) << "piece size " << piece;
        EXPECT_EQ(stripper.text(), whole.text);
        EXPECT_EQ(stripper.citations(), whole.citations) << "piece size " << piece;
    }
    EXPECT_EQ(whole.text,
              "Cruz Azul FC is in Mexico. Its coach is Über Trainer. Unknown and [note] "
              "stays.\nNew line claim");
    ASSERT_EQ(whole.citations.size(), 3u);
    EXPECT_EQ(claim(whole, 1), "Its coach is Über Trainer");
    EXPECT_EQ(claim(whole, 2), "New line claim");
}

TEST(MarkerStripper, HoldsBackOnlyWhatMightStillBeAMarker) {
    MarkerStripper stripper(edges_up_to(3), "e");
    EXPECT_EQ(stripper.feed("Paris is in France "), "Paris is in France");
    EXPECT_EQ(stripper.feed("[e"), "");
    EXPECT_EQ(stripper.feed("1]"), "");
    EXPECT_EQ(stripper.feed(". Next"), ". Next");
    EXPECT_EQ(stripper.feed(" [x y"), "");  // could still be "[x y, e1]"
    EXPECT_EQ(stripper.feed("!"), " [x y!");
    EXPECT_EQ(stripper.feed(" [e2"), "");
    EXPECT_EQ(stripper.finish(), " [e2");
    EXPECT_EQ(stripper.text(), "Paris is in France. Next [x y! [e2");
    ASSERT_EQ(stripper.citations().size(), 1u);
    EXPECT_EQ(stripper.citations()[0].end, 18u);
}

TEST(MarkerStripper, ChunkIdsUseTheirOwnPrefix) {
    const auto known = [](std::string_view id) { return id == "c1" || id == "c2"; };
    const auto out = strip_markers("Lilu is a spirit [c2]. Not an edge [e1].", known, "c");
    EXPECT_EQ(out.text, "Lilu is a spirit. Not an edge [e1].");
    ASSERT_EQ(out.citations.size(), 1u);
    EXPECT_EQ(out.citations[0].ids, std::vector<std::string>{"c2"});
}

}  // namespace
}  // namespace glassbox::rag
