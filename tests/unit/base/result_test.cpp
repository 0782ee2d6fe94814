// Error types: each has its own wire name, and the name reads back as the same type.
#include "base/result.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace glassbox::base {
namespace {

TEST(ErrorTypeTest, EveryTypeHasItsOwnNameThatReadsBack) {
    std::set<std::string> names;
    const auto last = static_cast<int>(ErrorType::kInternal);
    for (int i = 0; i <= last; ++i) {
        const auto type = static_cast<ErrorType>(i);
        const std::string name(to_string(type));
        EXPECT_TRUE(names.insert(name).second) << "two types named " << name;
        EXPECT_EQ(error_type_from_string(name), type) << name;
    }
    EXPECT_EQ(to_string(ErrorType::kStoreUnavailable), "StoreUnavailable");
    EXPECT_EQ(error_type_from_string("NoSuchError"), std::nullopt);
}

}  // namespace
}  // namespace glassbox::base
