// Whether two short answers give different values (reasoner/value_disagreement.hpp).
#include "reasoner/value_disagreement.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>

#include "text/tokenize.hpp"

namespace glassbox::reasoner {
namespace {

// A value longer than this many words is a sentence, not a value to compare.
constexpr std::size_t kMaxValueWords = 8;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The numbers `text` holds: runs of digits, with a '.' or ',' between digits kept inside one
// number ("1,200" is 1200, "28.5" is 28.5; a thousands comma and a decimal point as English
// writes them).
std::set<double> numbers_in(std::string_view text) {
    std::set<double> out;
    for (std::size_t i = 0; i < text.size();) {
        if (!is_digit(text[i])) {
            ++i;
            continue;
        }
        std::string digits;
        while (i < text.size()) {
            if (is_digit(text[i])) {
                digits.push_back(text[i++]);
            } else if ((text[i] == '.' || text[i] == ',') && i + 1 < text.size() &&
                       is_digit(text[i + 1])) {
                if (text[i] == '.') digits.push_back('.');
                ++i;
            } else {
                break;
            }
        }
        out.insert(std::strtod(digits.c_str(), nullptr));
    }
    return out;
}

bool yes_or_no(const std::string& normalised) { return normalised == "yes" || normalised == "no"; }

template <typename T>
bool disjoint(const std::set<T>& a, const std::set<T>& b) {
    return std::none_of(a.begin(), a.end(), [&](const T& x) { return b.contains(x); });
}

template <typename T>
bool subset(const std::set<T>& a, const std::set<T>& b) {
    return std::all_of(a.begin(), a.end(), [&](const T& x) { return b.contains(x); });
}

}  // namespace

bool values_disagree(std::string_view a, std::string_view b) {
    const std::string x = text::normalize(a);
    const std::string y = text::normalize(b);
    if (x.empty() || y.empty() || x == y) return false;
    if (text::words(x).size() > kMaxValueWords || text::words(y).size() > kMaxValueWords)
        return false;
    if (yes_or_no(x) || yes_or_no(y)) return yes_or_no(x) && yes_or_no(y);
    const auto nx = numbers_in(a);
    const auto ny = numbers_in(b);
    if (!nx.empty() || !ny.empty()) return !nx.empty() && !ny.empty() && disjoint(nx, ny);
    const auto sx_list = text::content_stems(x);
    const auto sy_list = text::content_stems(y);
    const std::set<std::string> sx(sx_list.begin(), sx_list.end());
    const std::set<std::string> sy(sy_list.begin(), sy_list.end());
    if (sx.empty() || sy.empty() || subset(sx, sy) || subset(sy, sx)) return false;
    return disjoint(sx, sy);
}

}  // namespace glassbox::reasoner
