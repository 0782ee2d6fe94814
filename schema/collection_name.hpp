// What a collection may be called: the store keeps each one in a file named after it, so the
// store and every client that takes a name from outside (the gateway) check it by this one rule.
#pragma once

#include <string>
#include <string_view>

#include "base/result.hpp"

namespace glassbox::schema {

inline constexpr std::string_view kDefaultCollection = "default";

// "" is the default collection; otherwise 1-64 of [A-Za-z0-9_.-], starting with a letter or
// digit (a collection is a file name). kInvalidRequest naming the rule otherwise.
base::Result<std::string> validate_collection(std::string_view name);

}  // namespace glassbox::schema
