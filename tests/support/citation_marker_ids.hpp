// The ids of the citation markers in an answer's text ("... [e1] ... [e2]" gives e1, e2): how the
// reasoner's and the llm service's tests read what an answer cites.
#pragma once

#include <string>
#include <vector>

namespace glassbox::test_support {

// The ids of every [marker] in `text`, in order. A marker is [ID] with ID of 1-32 letters,
// digits, '_' or '-' (std::regex is avoided: GCC 12 warns inside it under the sanitizers).
inline std::vector<std::string> marker_ids(const std::string& text) {
    std::vector<std::string> out;
    std::size_t open = text.find('[');
    while (open != std::string::npos) {
        const std::size_t close = text.find(']', open + 1);
        if (close == std::string::npos) break;
        const std::string id = text.substr(open + 1, close - open - 1);
        const bool valid = !id.empty() && id.size() <= 32 &&
                           id.find_first_not_of(
                               "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                               "0123456789_-") == std::string::npos;
        if (valid) out.push_back(id);
        open = text.find('[', valid ? close + 1 : open + 1);
    }
    return out;
}

}  // namespace glassbox::test_support
