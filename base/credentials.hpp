// Passwords a text may hold, masked before it is echoed (a configuration error quoting a value a
// user typed in the wrong place, such as a connection string).
#pragma once

#include <string>
#include <string_view>

namespace glassbox::base {

// `text` with "***" for the password of every URI user info (`scheme://user:secret@host`) and
// the value of every `password=` keyword, whatever its case (libpq's `key=value` form, quoted or
// not, and a URI's query parameter). Everything else is kept as it is.
std::string mask_credentials(std::string_view text);

}  // namespace glassbox::base
