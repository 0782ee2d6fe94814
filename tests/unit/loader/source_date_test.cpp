// A file's own date among its statements (issue 35): about the file's node only, the best
// predicate wins whatever batch it comes in, and a literal that is no date is passed over.
#include "loader/source_date.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schema/vocabulary.hpp"

namespace glassbox::loader {
namespace {

namespace vocab = schema::vocab;
using schema::iri;
using schema::literal;

const std::string kFile = "file:///data/ships.ttl";

schema::Triple dated(const std::string& node, std::string_view predicate, const char* value) {
    return {iri(node), iri(predicate), literal(value), std::nullopt};
}

TEST(SourceDateFinderTest, FindsTheFilesDateAndNothingAboutOtherNodes) {
    SourceDateFinder finder({kFile});
    finder.scan(std::vector<schema::Triple>{
        dated("https://example.org/ship", vocab::kDctermsModified, "2024-05-01")});
    EXPECT_EQ(finder.date(), "") << "a date of another node is not the file's";
    finder.scan(std::vector<schema::Triple>{dated(kFile, vocab::kDctermsDate, "2020-01-01")});
    EXPECT_EQ(finder.date(), "2020-01-01");
}

TEST(SourceDateFinderTest, TheLastChangeWinsOverTheIssueInAnyBatchOrder) {
    SourceDateFinder finder({"urn:glassbox:upload/x.ttl", kFile});
    finder.scan(std::vector<schema::Triple>{dated(kFile, vocab::kDctermsIssued, "2019-03-01")});
    finder.scan(
        std::vector<schema::Triple>{dated(kFile, vocab::kDctermsModified, "2021-06-30T10:00:00Z"),
                                    dated(kFile, vocab::kProvGeneratedAtTime, "2022-01-01")});
    EXPECT_EQ(finder.date(), "2021-06-30T10:00:00Z");
    finder.scan(std::vector<schema::Triple>{dated(kFile, vocab::kDctermsIssued, "2023-01-01")});
    EXPECT_EQ(finder.date(), "2021-06-30T10:00:00Z") << "a lesser predicate does not replace it";
}

TEST(SourceDateFinderTest, ALiteralThatIsNoDateIsPassedOver) {
    SourceDateFinder finder({kFile});
    finder.scan(std::vector<schema::Triple>{dated(kFile, vocab::kDctermsModified, "last spring"),
                                            dated(kFile, vocab::kSchemaDateModified, "2018")});
    EXPECT_EQ(finder.date(), "");
    finder.scan(
        std::vector<schema::Triple>{dated(kFile, vocab::kSchemaDateModified, "2018-02-03")});
    EXPECT_EQ(finder.date(), "2018-02-03");
}

}  // namespace
}  // namespace glassbox::loader
