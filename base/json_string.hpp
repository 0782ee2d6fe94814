// JSON string literals, written once for every JSON glassbox writes by hand (the explain
// messages' fast writer in schema/, the JSON log lines): quotes, the escapes RFC 8259 requires
// (\" \\ \b \f \n \r \t, \u00XX for the other control characters), UTF-8 as it is.
#pragma once

#include <string>
#include <string_view>

namespace glassbox::base {

// Appends `value` to `out` as a JSON string with its quotes and returns true; when `value` is
// not well-formed UTF-8, leaves `out` as it was and returns false (the caller decides how
// ill-formed text is written: replaced, or escaped as printable_utf8 does).
bool append_json_string(std::string& out, std::string_view value);

}  // namespace glassbox::base
