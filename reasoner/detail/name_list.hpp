// A list of names as an answer writes it: "A", "A and B", "A, B and C", "A, B and 3 others".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace glassbox::reasoner::detail {

// `names` joined with commas and a final "and"; `others` > 0 adds "and N other(s)" after them.
inline std::string join_names(const std::vector<std::string>& names, std::size_t others) {
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i) out += (i + 1 == names.size() && others == 0) ? " and " : ", ";
        out += names[i];
    }
    if (others > 0) out += " and " + std::to_string(others) + (others == 1 ? " other" : " others");
    return out;
}

}  // namespace glassbox::reasoner::detail
