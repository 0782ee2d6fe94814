// Redactor: hand-written scanners for the built-in rules (no regex: they run on every literal of
// every explain message), std::regex for the user's patterns on bounded pieces of text.
#include "text/redactor.hpp"

#include <algorithm>

#include "base/utf8.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::text {
namespace {

using base::ErrorType;
using base::make_error;
using base::Result;
using Span = std::pair<std::size_t, std::size_t>;

constexpr std::array<std::string_view, kRedactionScopes> kScopeNames{
    "question", "answer", "observations", "documents", "other"};

bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_alnum(char c) noexcept { return is_digit(c) || is_alpha(c); }

// True when a match may start at `at`: the text before it does not continue a word or number.
bool left_boundary(std::string_view text, std::size_t at) noexcept {
    return at == 0 || !is_alnum(text[at - 1]);
}
bool right_boundary(std::string_view text, std::size_t end) noexcept {
    return end >= text.size() || !is_alnum(text[end]);
}

// ---- email --------------------------------------------------------------------------------

// Bytes of non-ASCII characters count as letters: internationalised addresses (RFC 6531).
bool non_ascii(char c) noexcept { return (static_cast<unsigned char>(c) & 0x80) != 0; }
bool local_char(char c) noexcept {
    return is_alnum(c) || non_ascii(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
}
bool domain_char(char c) noexcept { return is_alnum(c) || non_ascii(c) || c == '.' || c == '-'; }

// The address around the '@' at `at`, or nullopt: a local part, a domain with a dot and a
// top-level label of two or more letters.
std::optional<Span> email_at(std::string_view text, std::size_t at) {
    std::size_t begin = at;
    while (begin > 0 && local_char(text[begin - 1])) --begin;
    while (begin < at && text[begin] == '.') ++begin;
    std::size_t end = at + 1;
    while (end < text.size() && domain_char(text[end])) ++end;
    while (end > at + 1 && (text[end - 1] == '.' || text[end - 1] == '-')) --end;
    if (begin == at || end <= at + 1 || !(is_alnum(text[at + 1]) || non_ascii(text[at + 1])))
        return std::nullopt;
    const auto domain = text.substr(at + 1, end - at - 1);
    const auto dot = domain.rfind('.');
    if (dot == std::string_view::npos || domain.size() - dot - 1 < 2) return std::nullopt;
    for (const char c : domain.substr(dot + 1))
        if (!is_alpha(c) && !non_ascii(c)) return std::nullopt;
    return Span{begin, end};
}

std::vector<Span> find_emails(std::string_view text) {
    std::vector<Span> out;
    std::size_t from = 0;
    while ((from = text.find('@', from)) != std::string_view::npos) {
        const auto found = email_at(text, from);
        if (found && (out.empty() || found->first >= out.back().second)) {
            out.push_back(*found);
            from = found->second;
        } else {
            ++from;
        }
    }
    return out;
}

// ---- digit groups (phone, card) -------------------------------------------------------------

struct DigitRun {
    Span span;                        // from the first character taken to the last digit
    std::vector<std::size_t> groups;  // digits per group
    std::vector<std::size_t> ends;    // byte end of each group
    std::vector<char> separators;     // between groups: ' ', '-', '.' or ')' for "(…) "
    bool plus = false;                // began with '+'
    bool paren_first = false;         // the first group was in parentheses
};

std::size_t digits_from(std::string_view text, std::size_t at) {
    std::size_t end = at;
    while (end < text.size() && is_digit(text[end])) ++end;
    return end - at;
}

// Digit groups from `at` (a digit, '+' or '('), each group separated by one of `separators` or
// a parenthesised group: "+44 (0)20 7946 0958", "(555) 123-4567", "4111-1111-1111-1111".
DigitRun digit_run(std::string_view text, std::size_t at, std::string_view separators) {
    DigitRun run;
    run.span = {at, at};
    std::size_t i = at;
    if (text[i] == '+') {
        run.plus = true;
        ++i;
    }
    for (;;) {
        const bool paren =
            i < text.size() && text[i] == '(' && separators.find(' ') != std::string_view::npos;
        const std::size_t start = paren ? i + 1 : i;
        const std::size_t n = start < text.size() ? digits_from(text, start) : 0;
        if (n == 0 || (paren && (start + n >= text.size() || text[start + n] != ')'))) break;
        if (paren && run.groups.empty()) run.paren_first = true;
        run.groups.push_back(n);
        run.ends.push_back(start + n);
        run.span.second = start + n;
        i = start + n + (paren ? 1 : 0);
        // One separator (a space may follow a closing parenthesis or stand alone).
        char separator = paren ? ')' : '\0';
        if (i < text.size() && separators.find(text[i]) != std::string_view::npos) {
            if (!paren) separator = text[i];
            ++i;
        } else if (!paren) {
            break;
        }
        if (i >= text.size() || !(is_digit(text[i]) || text[i] == '(')) break;
        run.separators.push_back(separator);
    }
    return run;
}

std::size_t total_digits(const DigitRun& run, std::size_t groups) {
    std::size_t n = 0;
    for (std::size_t g = 0; g < groups; ++g) n += run.groups[g];
    return n;
}

bool same_separators(const DigitRun& run, std::size_t from) {
    for (std::size_t s = from; s < run.separators.size(); ++s)
        if (run.separators[s] != run.separators[from]) return false;
    return true;
}

// The number of leading groups that form a phone number, or 0.
std::size_t phone_groups(std::string_view text, const DigitRun& run) {
    const auto& g = run.groups;
    const std::size_t digits = total_digits(run, g.size());
    // International: +CC and 8-15 digits in all (E.164).
    if (run.plus) return digits >= 8 && digits <= 15 ? g.size() : 0;
    if (g.size() < 2) return 0;
    // North American: (555) 123-4567, 555-123-4567, 555.123.4567, 1 555 123 4567.
    const std::size_t skip = g.size() == 4 && g[0] == 1 && text[run.span.first] == '1' ? 1 : 0;
    if (g.size() == 3 + skip && g[skip] == 3 && g[skip + 1] == 3 && g[skip + 2] == 4) {
        if (run.paren_first || same_separators(run, skip)) return g.size();
    }
    // National with a trunk prefix 0: 030 1234567, 020 7946 0958, 06 12 34 56 78.
    const char first = text[run.span.first + (run.paren_first ? 1 : 0)];
    if (first == '0' && g[0] >= 2 && g[0] <= 5 && digits >= 9 && digits <= 12 &&
        run.separators.front() != '.') {
        return g.size();
    }
    return 0;
}

std::vector<Span> find_phones(std::string_view text) {
    std::vector<Span> out;
    std::size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        const bool starts = (is_digit(c) || c == '(' ||
                             (c == '+' && i + 1 < text.size() && is_digit(text[i + 1]))) &&
                            left_boundary(text, i);
        if (!starts) {
            ++i;
            continue;
        }
        const DigitRun run = digit_run(text, i, " -.");
        if (!run.groups.empty() && right_boundary(text, run.span.second) &&
            phone_groups(text, run) == run.groups.size()) {
            out.push_back(run.span);
            i = run.span.second;
        } else {
            i = std::max(run.span.second, i + 1);
        }
    }
    return out;
}

bool luhn(std::string_view text, Span span) {
    int sum = 0;
    bool twice = false;
    for (std::size_t i = span.second; i > span.first; --i) {
        const char c = text[i - 1];
        if (!is_digit(c)) continue;
        int d = c - '0';
        if (twice) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
        sum += d;
        twice = !twice;
    }
    return sum % 10 == 0;
}

std::vector<Span> find_cards(std::string_view text) {
    std::vector<Span> out;
    std::size_t i = 0;
    while (i < text.size()) {
        if (!is_digit(text[i]) || !left_boundary(text, i) || (i > 0 && text[i - 1] == '+')) {
            ++i;
            continue;
        }
        const DigitRun run = digit_run(text, i, " -");
        // The longest leading groups of 13-19 digits that pass the Luhn check ("4111 1111 1111
        // 1111 12/27" is the card and an expiry date).
        std::optional<Span> card;
        for (std::size_t n = run.groups.size(); n > 0 && !card; --n) {
            const std::size_t digits = total_digits(run, n);
            const Span span{i, run.ends[n - 1]};
            if (digits >= 13 && digits <= 19 && right_boundary(text, span.second) &&
                luhn(text, span))
                card = span;
        }
        if (card) {
            out.push_back(*card);
            i = card->second;
        } else {
            i = std::max(run.span.second, i + 1);
        }
    }
    return out;
}

// ---- iban -----------------------------------------------------------------------------------

int iban_value(char c) noexcept {
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'z') return c - 'a' + 10;
    return c - 'A' + 10;
}

// ISO 13616: the BBAN, then the country and check digits, with letters as 10..35, mod 97 = 1.
bool iban_valid(const std::string& chars) {
    const std::string moved = chars.substr(4) + chars.substr(0, 4);
    int rest = 0;
    for (const char c : moved) {
        const int v = iban_value(c);
        rest = (v >= 10 ? rest * 100 + v : rest * 10 + v) % 97;
    }
    return rest == 1;
}

std::optional<Span> iban_at(std::string_view text, std::size_t at) {
    if (at + 4 > text.size() || !is_alpha(text[at]) || !is_alpha(text[at + 1]) ||
        !is_digit(text[at + 2]) || !is_digit(text[at + 3]))
        return std::nullopt;
    std::string chars;
    std::vector<std::pair<std::size_t, std::size_t>> ends;  // (byte end, chars so far)
    std::size_t i = at;
    while (i < text.size() && chars.size() < 34) {
        if (is_alnum(text[i])) {
            chars.push_back(text[i++]);
            if (i >= text.size() || !is_alnum(text[i])) ends.emplace_back(i, chars.size());
        } else if (text[i] == ' ' && i + 1 < text.size() && is_alnum(text[i + 1]) &&
                   !chars.empty()) {
            ++i;
        } else {
            break;
        }
    }
    for (auto e = ends.rbegin(); e != ends.rend(); ++e) {
        if (e->second < 15 || e->second > 34 || !right_boundary(text, e->first)) continue;
        if (iban_valid(chars.substr(0, e->second))) return Span{at, e->first};
    }
    return std::nullopt;
}

std::vector<Span> find_ibans(std::string_view text) {
    std::vector<Span> out;
    std::size_t i = 0;
    while (i + 4 <= text.size()) {
        const auto found = left_boundary(text, i) ? iban_at(text, i) : std::nullopt;
        if (found) {
            out.push_back(*found);
            i = found->second;
        } else {
            ++i;
        }
    }
    return out;
}

// ---- masking --------------------------------------------------------------------------------

bool continuation(char c) noexcept { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// `text` with each span (sorted, disjoint) masked; spans widened to whole code points.
std::string mask_spans(std::string_view text, std::string_view rule,
                       const std::vector<Span>& spans) {
    std::string out;
    out.reserve(text.size());
    std::size_t at = 0;
    for (auto [begin, end] : spans) {
        while (begin > at && continuation(text[begin])) --begin;
        while (end < text.size() && continuation(text[end])) ++end;
        if (begin < at) begin = at;
        out.append(text.substr(at, begin - at));
        out.append(redaction_mask(rule, base::count_code_points(text.substr(begin, end - begin))));
        at = end;
    }
    out.append(text.substr(at));
    return out;
}

// The pieces of at most kMaxPatternInput bytes a pattern runs on.
std::vector<Span> pattern_pieces(std::string_view text) {
    std::vector<Span> pieces;
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = std::min(text.size(), at + kMaxPatternInput);
        if (end < text.size()) {
            const auto window = text.substr(at, end - at);
            auto cut = window.rfind('\n');
            if (cut == std::string_view::npos || cut == 0) cut = window.rfind(' ');
            if (cut != std::string_view::npos && cut > 0) end = at + cut;
            while (end > at + 1 && continuation(text[end])) --end;
        }
        pieces.emplace_back(at, end);
        at = end;
    }
    return pieces;
}

std::vector<Span> find_pattern(const std::regex& regex, std::string_view text) {
    std::vector<Span> out;
    for (const auto& [from, to] : pattern_pieces(text)) {
        const char* first = text.data() + from;
        const char* last = text.data() + to;
        for (auto it = std::cregex_iterator(first, last, regex); it != std::cregex_iterator();
             ++it) {
            if (it->length(0) == 0) continue;
            const std::size_t begin = from + static_cast<std::size_t>(it->position(0));
            const std::size_t end = begin + static_cast<std::size_t>(it->length(0));
            if (out.empty() || begin >= out.back().second) out.emplace_back(begin, end);
        }
    }
    return out;
}

// ---- configuration --------------------------------------------------------------------------

base::Error config_error(std::string message) {
    return make_error(ErrorType::kInvalidRequest, std::move(message));
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '"'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '"'))
        s.remove_suffix(1);
    return s;
}

bool is_builtin(std::string_view name) {
    return std::find(kBuiltinRedactionRules.begin(), kBuiltinRedactionRules.end(), name) !=
           kBuiltinRedactionRules.end();
}

Result<void> add_rule(std::vector<std::string>& rules, std::string_view name) {
    if (!is_builtin(name)) {
        return config_error("redaction.rules: unknown rule \"" + base::printable_utf8(name) +
                            "\" (known: email, phone, card, iban)");
    }
    if (std::find(rules.begin(), rules.end(), name) == rules.end()) rules.emplace_back(name);
    return {};
}

bool pattern_name_ok(std::string_view name) {
    if (name.empty() || name.size() > 32) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_';
    });
}

Result<std::vector<RedactionScope>> parse_scopes(const nlohmann::json* scope,
                                                 std::string_view name) {
    std::vector<RedactionScope> scopes;
    if (scope == nullptr) {
        return std::vector<RedactionScope>{RedactionScope::kQuestion, RedactionScope::kAnswer,
                                           RedactionScope::kObservations,
                                           RedactionScope::kDocuments};
    }
    const auto names = scope->is_array() ? *scope : nlohmann::json::array({*scope});
    for (const auto& s : names) {
        const auto parsed =
            s.is_string() ? redaction_scope_from_string(s.get<std::string>()) : std::nullopt;
        if (!parsed) {
            return config_error("redaction.patterns: pattern \"" + std::string(name) +
                                "\" has an unknown scope " + base::printable_utf8(s.dump()) +
                                " (known: question, answer, observations, documents)");
        }
        if (std::find(scopes.begin(), scopes.end(), *parsed) == scopes.end())
            scopes.push_back(*parsed);
    }
    if (scopes.empty()) {
        return config_error("redaction.patterns: pattern \"" + std::string(name) +
                            "\" has an empty scope");
    }
    return scopes;
}

Result<RedactionPattern> parse_pattern(const nlohmann::json& item, std::size_t index) {
    const std::string where = "redaction.patterns: pattern " + std::to_string(index + 1);
    if (!item.is_object()) return config_error(where + " is not an object");
    for (const auto& [key, value] : item.items()) {
        if (key != "name" && key != "regex" && key != "scope" && key != "scopes") {
            return config_error(where + " has an unknown key \"" + base::printable_utf8(key) +
                                "\" (known: name, regex, scope)");
        }
    }
    const auto name = item.find("name");
    const auto regex = item.find("regex");
    if (name == item.end() || !name->is_string() || !pattern_name_ok(name->get<std::string>()) ||
        is_builtin(name->get<std::string>())) {
        return config_error(where +
                            " needs a name of 1-32 of a-z 0-9 - _ that is not a "
                            "built-in rule's");
    }
    if (regex == item.end() || !regex->is_string() || regex->get<std::string>().empty()) {
        return config_error(where + " (" + name->get<std::string>() + ") needs a regex");
    }
    const auto scope_it = item.contains("scope") ? item.find("scope") : item.find("scopes");
    auto scopes =
        parse_scopes(scope_it == item.end() ? nullptr : &*scope_it, name->get<std::string>());
    if (!scopes) return std::move(scopes).error();
    return RedactionPattern{name->get<std::string>(), regex->get<std::string>(),
                            std::move(scopes).value()};
}

}  // namespace

std::string_view to_string(RedactionScope scope) noexcept {
    return kScopeNames[static_cast<std::size_t>(scope)];
}

std::optional<RedactionScope> redaction_scope_from_string(std::string_view name) noexcept {
    for (std::size_t i = 0; i + 1 < kScopeNames.size(); ++i)
        if (kScopeNames[i] == name) return static_cast<RedactionScope>(i);
    return std::nullopt;
}

Result<std::vector<std::string>> parse_redaction_rules(std::string_view text) {
    std::vector<std::string> rules;
    const auto trimmed = trim(text);
    if (trimmed.empty()) return rules;
    if (text.find('[') != std::string_view::npos) {
        auto json = schema::parse_untrusted_json(text);
        if (!json || !json->is_array())
            return config_error("redaction.rules: not a JSON array of rule names");
        for (const auto& item : *json) {
            if (!item.is_string())
                return config_error("redaction.rules: a rule name is not a string");
            if (auto r = add_rule(rules, item.get<std::string>()); !r) return r.error();
        }
        return rules;
    }
    std::size_t at = 0;
    while (at <= text.size()) {
        const auto comma = std::min(text.find(',', at), text.size());
        const auto name = trim(text.substr(at, comma - at));
        if (!name.empty())
            if (auto r = add_rule(rules, name); !r) return r.error();
        at = comma + 1;
    }
    return rules;
}

Result<std::vector<RedactionPattern>> parse_redaction_patterns(std::string_view text) {
    std::vector<RedactionPattern> patterns;
    if (trim(text).empty()) return patterns;
    auto json = schema::parse_untrusted_json(text);
    if (!json) return config_error("redaction.patterns: not JSON: " + json.error().message);
    const auto items = json->is_object() ? nlohmann::json::array({*json}) : *json;
    if (!items.is_array()) return config_error("redaction.patterns: not an array of patterns");
    for (std::size_t i = 0; i < items.size(); ++i) {
        auto pattern = parse_pattern(items[i], i);
        if (!pattern) return std::move(pattern).error();
        for (const auto& seen : patterns) {
            if (seen.name == pattern->name) {
                return config_error("redaction.patterns: two patterns are named \"" + seen.name +
                                    "\"");
            }
        }
        patterns.push_back(std::move(pattern).value());
    }
    // Each must compile: the same check as Redactor::make.
    if (auto made = Redactor::make({}, patterns); !made) return std::move(made).error();
    return patterns;
}

namespace {

// The message without the setting's name: the configuration names it itself.
std::string without_key(std::string message, std::string_view key) {
    const std::string prefix = std::string(key) + ": ";
    if (message.starts_with(prefix)) message.erase(0, prefix.size());
    return message;
}

}  // namespace

std::optional<std::string> redaction_rules_problem(std::string_view text) {
    auto parsed = parse_redaction_rules(text);
    if (parsed) return std::nullopt;
    return without_key(parsed.error().message, "redaction.rules");
}

std::optional<std::string> redaction_patterns_problem(std::string_view text) {
    auto parsed = parse_redaction_patterns(text);
    if (parsed) return std::nullopt;
    return without_key(parsed.error().message, "redaction.patterns");
}

void RedactionTally::add(std::string_view rule, RedactionScope scope, std::uint64_t count) {
    if (count > 0) counts_[{std::string(rule), scope}] += count;
}

std::uint64_t RedactionTally::total() const noexcept {
    std::uint64_t n = 0;
    for (const auto& [key, count] : counts_) n += count;
    return n;
}

Result<Redactor> Redactor::make(const std::vector<std::string>& rules,
                                const std::vector<RedactionPattern>& patterns) {
    Redactor out;
    // The most specific first: an IBAN's digits must not be taken for a card's, a card's for a
    // phone number's.
    constexpr std::array<std::string_view, 4> kApplyOrder{"email", "iban", "card", "phone"};
    for (const auto builtin : kApplyOrder) {
        if (std::find(rules.begin(), rules.end(), builtin) != rules.end())
            out.rules_.emplace_back(builtin);
    }
    for (const auto& rule : rules)
        if (!is_builtin(rule))
            return config_error("redaction.rules: unknown rule \"" + rule + "\"");
    for (const auto& p : patterns) {
        CompiledPattern compiled;
        compiled.name = p.name;
        try {
            compiled.regex = std::regex(p.regex, std::regex::ECMAScript | std::regex::optimize);
        } catch (const std::regex_error& e) {
            return config_error("redaction.patterns: the regex of \"" + p.name +
                                "\" does not compile: " + e.what());
        }
        for (const auto scope : p.scopes) {
            if (scope == RedactionScope::kOther)
                return config_error("redaction.patterns: \"other\" is not a scope a pattern names");
            compiled.scopes[static_cast<std::size_t>(scope)] = true;
        }
        out.patterns_.push_back(std::move(compiled));
    }
    return out;
}

Result<Redactor> Redactor::from_settings(std::string_view rules, std::string_view patterns) {
    auto parsed_rules = parse_redaction_rules(rules);
    if (!parsed_rules) return std::move(parsed_rules).error();
    auto parsed_patterns = parse_redaction_patterns(patterns);
    if (!parsed_patterns) return std::move(parsed_patterns).error();
    return make(*parsed_rules, *parsed_patterns);
}

std::optional<std::string> Redactor::redact(std::string_view text, RedactionScope scope,
                                            RedactionTally& tally) const {
    return apply(text, scope, false, tally);
}

std::optional<std::string> Redactor::redact_everywhere(std::string_view text, RedactionScope scope,
                                                       RedactionTally& tally) const {
    return apply(text, scope, true, tally);
}

std::optional<std::string> Redactor::apply(std::string_view text, RedactionScope scope,
                                           bool all_patterns, RedactionTally& tally) const {
    std::optional<std::string> changed;
    const auto current = [&]() -> std::string_view { return changed ? *changed : text; };
    for (const auto& rule : rules_) {
        const auto spans = find_builtin(rule, current());
        if (spans.empty()) continue;
        tally.add(rule, scope, spans.size());
        changed = mask_spans(current(), rule, spans);
    }
    for (const auto& p : patterns_) {
        if (!all_patterns && !p.scopes[static_cast<std::size_t>(scope)]) continue;
        const auto spans = find_pattern(p.regex, current());
        if (spans.empty()) continue;
        tally.add(p.name, scope, spans.size());
        changed = mask_spans(current(), p.name, spans);
    }
    return changed;
}

std::vector<Span> find_builtin(std::string_view rule, std::string_view text) {
    if (rule == "email") return find_emails(text);
    if (rule == "phone") return find_phones(text);
    if (rule == "card") return find_cards(text);
    if (rule == "iban") return find_ibans(text);
    return {};
}

std::string redaction_mask(std::string_view rule, std::size_t code_points) {
    const std::size_t tag = rule.size() + 2;
    if (code_points < tag) return std::string(code_points, '*');
    std::string out;
    out.reserve(code_points);
    out.push_back('[');
    out.append(rule);
    out.push_back(']');
    out.append(code_points - tag, '*');
    return out;
}

}  // namespace glassbox::text
