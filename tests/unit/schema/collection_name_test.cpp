// The rule for collection names (schema/collection_name.hpp), shared by the store and gateway.
#include <gtest/gtest.h>

#include "schema/collection_name.hpp"

namespace glassbox::schema {
namespace {

TEST(CollectionName, TheEmptyNameIsTheDefaultAndFileNameSafeNamesPass) {
    EXPECT_EQ(*validate_collection(""), "default");
    for (const std::string& name : {std::string("a"), std::string("docs"), std::string("Docs-1.v2"),
                                    std::string("9_lives"), std::string(64, 'x')})
        EXPECT_EQ(*validate_collection(name), name);
}

TEST(CollectionName, AnythingThatCouldLeaveItsFolderIsRefusedNamingTheRule) {
    for (const std::string name :
         {"../../x", "a/b", "a\\b", ".hidden", "-x", "_x", "a b", "caf\xC3\xA9", "a\x01"}) {
        const auto refused = validate_collection(name);
        ASSERT_FALSE(refused) << name;
        EXPECT_EQ(refused.error().type, base::ErrorType::kInvalidRequest);
        EXPECT_NE(refused.error().message.find("is not a valid name: 1-64 of"), std::string::npos);
    }
    EXPECT_FALSE(validate_collection(std::string(65, 'x')));
    // The name is quoted printably, whatever bytes it holds.
    EXPECT_EQ(validate_collection("a\x01\xFF").error().message.substr(0, 22),
              "collection \"a\\x01\\xFF\"");
}

}  // namespace
}  // namespace glassbox::schema
