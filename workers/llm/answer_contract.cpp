// The synthesis templates' answer contract: the Answer line parsed, every marker checked.
#include "workers/llm/answer_contract.hpp"

#include <algorithm>

#include "base/ascii.hpp"

namespace glassbox::llm {

namespace {

constexpr std::size_t kMaxIdLength = 32;
constexpr std::size_t kMaxListedIds = 8;  // in a problem message

bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool is_id_char(char c) noexcept {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

bool is_marker_id(std::string_view id) noexcept {
    return !id.empty() && id.size() <= kMaxIdLength &&
           std::all_of(id.begin(), id.end(), is_id_char);
}

// "e12" → "e"; "" for an id that is not letters (or '_'/'-') followed by digits.
std::string_view numbered_prefix(std::string_view id) {
    std::size_t digits = id.size();
    while (digits > 0 && is_digit(id[digits - 1])) --digits;
    if (digits == id.size() || digits == 0) return {};
    return id.substr(0, digits);
}

using IdSet = std::set<std::string, std::less<>>;

// Reads the ids of the marker group whose content is `content` (between the brackets):
// false when it is not a marker group (see check_reply).
bool marker_group(std::string_view content, const IdSet* known, const IdSet& prefixes,
                  std::vector<std::string>& ids) {
    std::vector<std::string> found;
    while (true) {
        const auto comma = content.find(',');
        const auto token = trim(content.substr(0, comma));
        if (!is_marker_id(token)) return false;
        if (known && !known->contains(token)) {
            const auto prefix = numbered_prefix(token);
            if (prefix.empty() || !prefixes.contains(prefix)) return false;
        }
        found.emplace_back(token);
        if (comma == std::string_view::npos) break;
        content.remove_prefix(comma + 1);
    }
    ids = std::move(found);
    return true;
}

std::string listed(const IdSet& known) {
    if (known.empty()) return "none";
    std::string out;
    std::size_t n = 0;
    for (const auto& id : known) {
        if (n++ == kMaxListedIds) {
            out += ", …";
            break;
        }
        if (!out.empty()) out += ", ";
        out += id;
    }
    return out;
}

std::optional<std::string> invented(const std::vector<std::string>& ids, const IdSet* known,
                                    std::string_view where) {
    if (!known) return std::nullopt;
    for (const auto& id : ids) {
        if (!known->contains(id)) {
            return "marker [" + id + "] " + std::string(where) +
                   " names no given id (the ids given: " + listed(*known) + ")";
        }
    }
    return std::nullopt;
}

bool starts_with_answer(std::string_view line) {
    constexpr std::string_view kAnswer = "answer:";
    if (line.size() < kAnswer.size()) return false;
    for (std::size_t i = 0; i < kAnswer.size(); ++i) {
        if (base::ascii_lower(line[i]) != kAnswer[i]) return false;
    }
    return true;
}

}  // namespace

std::optional<IdSet> citable_ids(const PromptTemplate& prompt_template,
                                 const RenderedPrompt& rendered) {
    if (prompt_template.cite.empty()) return std::nullopt;
    IdSet ids;
    const auto it = rendered.json_variables.find(prompt_template.cite);
    if (it == rendered.json_variables.end() || !it->second.is_array()) return ids;
    for (const auto& item : it->second) {
        if (!item.is_object()) continue;
        const auto id = item.find("id");
        if (id != item.end() && id->is_string()) ids.insert(id->get<std::string>());
    }
    return ids;
}

bool has_contract(const PromptTemplate& prompt_template) noexcept {
    return prompt_template.answer != AnswerForm::kNone || !prompt_template.cite.empty();
}

std::optional<std::string> check_reply(const PromptTemplate& prompt_template,
                                       const RenderedPrompt& rendered, std::string_view reply,
                                       ContractReply& out) {
    const auto known = citable_ids(prompt_template, rendered);
    return check_reply(prompt_template.answer, known ? &*known : nullptr, reply, out);
}

std::optional<std::string> check_reply(AnswerForm form, const IdSet* known, std::string_view reply,
                                       ContractReply& out) {
    IdSet prefixes;
    if (known) {
        for (const auto& id : *known) {
            if (const auto p = numbered_prefix(id); !p.empty()) prefixes.emplace(p);
        }
    }
    out = ContractReply{};
    std::string_view text = reply;
    if (form == AnswerForm::kFirstLine) {
        std::size_t start = 0;
        while (start < reply.size() && is_space(reply[start])) ++start;
        const std::size_t eol = reply.find('\n', start);
        std::string_view line = trim(reply.substr(
            start, eol == std::string_view::npos ? std::string_view::npos : eol - start));
        if (!starts_with_answer(line)) {
            return std::string(
                "the reply does not start with an \"Answer:\" line (the short "
                "answer, then its markers, then the cited sentences)");
        }
        line = trim(line.substr(7));
        // The markers at the end of the line, last group first; a final '.' around them goes.
        std::vector<std::string> ids;
        if (line.ends_with("].")) line.remove_suffix(1);
        while (true) {
            if (line.empty() || line.back() != ']') break;
            const auto open = line.rfind('[');
            std::vector<std::string> group;
            if (open == std::string_view::npos ||
                !marker_group(line.substr(open + 1, line.size() - open - 2), known, prefixes,
                              group))
                break;
            ids.insert(ids.begin(), group.begin(), group.end());
            line = trim(line.substr(0, open));
        }
        if (auto why = invented(ids, known, "on the Answer line")) return why;
        // A stray '.' ending a one-name answer ("Oskar Brenn.") is not part of it; an
        // abbreviation's ("U.S.") is.
        if (line.size() > 1 && line.back() == '.' &&
            !(line[line.size() - 2] >= 'A' && line[line.size() - 2] <= 'Z'))
            line.remove_suffix(1);
        for (auto& id : ids) {
            if (std::find(out.answer_ids.begin(), out.answer_ids.end(), id) == out.answer_ids.end())
                out.answer_ids.push_back(std::move(id));
        }
        out.answer = std::string(line);
        text = eol == std::string_view::npos ? std::string_view() : reply.substr(eol + 1);
        while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    }
    // Every marker group of the text names given ids.
    for (std::size_t open = text.find('['); open != std::string_view::npos;
         open = text.find('[', open + 1)) {
        const auto close = text.find(']', open + 1);
        if (close == std::string_view::npos) break;
        std::vector<std::string> group;
        if (!marker_group(text.substr(open + 1, close - open - 1), known, prefixes, group))
            continue;
        if (auto why = invented(group, known, "in the text")) return why;
    }
    out.text = std::string(text);
    return std::nullopt;
}

std::string AnswerLineHold::feed(std::string_view piece) {
    // Blank space before the Answer line, the line itself and the blank space after it are
    // held (never shown), as check_reply skips them.
    for (std::size_t i = 0; i < piece.size(); ++i) {
        const char c = piece[i];
        switch (state_) {
            case State::kLead:
                if (!is_space(c)) state_ = State::kLine;
                break;
            case State::kLine:
                if (c == '\n') state_ = State::kGap;
                break;
            case State::kGap:
                if (!is_space(c)) {
                    state_ = State::kText;
                    return std::string(piece.substr(i));
                }
                break;
            case State::kText:
                return std::string(piece.substr(i));
        }
    }
    return {};
}

}  // namespace glassbox::llm
