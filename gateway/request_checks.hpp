// The checks of what a client sent that every route makes alike: only the names the route takes
// (query-string parameters, JSON body fields), and a question with some text in it. Pure (no
// HTTP), so unit-tested; a route answers each error as a 400 problem.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"

namespace glassbox::gateway {

// `given` (the names a request holds, in order) each one of `accepted` and none twice; else
// InvalidRequest naming the first that is not and listing `accepted`:
//   unknown parameter "colour" (this route takes kind, status, limit)
// `what` says which names they are: "parameter" (a query string) or "field" (a JSON body).
base::Result<void> only_known(std::string_view what, std::span<const std::string> given,
                              std::span<const std::string_view> accepted);

// A JSON object's members checked as only_known("field", …).
base::Result<void> only_known_fields(const nlohmann::json& body,
                                     std::span<const std::string_view> accepted);

// True when `text` is empty or only white space (Unicode White_Space: spaces, tabs, line ends,
// no-break and ideographic spaces, …): a question or search with nothing to ask.
bool is_blank(std::string_view text);

}  // namespace glassbox::gateway
