// Redaction of personal data in text before it is stored (docs/security.md, "Redaction"): the
// built-in rules (e-mail addresses, phone numbers, card numbers, IBANs) and the user's own
// regular expressions, each for some scopes; every match is masked in place with as many code
// points as it had, so character offsets into the text (a citation's span) stay valid.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace glassbox::text {

// What a text is, for the user patterns' scopes. kOther (any other text of a trace: an error
// message, an identifier) cannot be named in a pattern's scope: the built-in rules apply to it,
// the patterns do not (except redact_everywhere).
enum class RedactionScope : unsigned char { kQuestion, kAnswer, kObservations, kDocuments, kOther };
inline constexpr std::size_t kRedactionScopes = 5;
std::string_view to_string(RedactionScope scope) noexcept;  // "question", ..., "other"
// The scope a pattern may name ("question", "answer", "observations", "documents"), or nullopt.
std::optional<RedactionScope> redaction_scope_from_string(std::string_view name) noexcept;

// The built-in rules, by name.
inline constexpr std::array<std::string_view, 4> kBuiltinRedactionRules{"email", "phone", "card",
                                                                        "iban"};

// A user pattern as configured: a name (1-32 of a-z 0-9 - _, not a built-in rule's), an
// ECMAScript regular expression and the scopes it applies to (never empty, no kOther).
struct RedactionPattern {
    std::string name;
    std::string regex;
    std::vector<RedactionScope> scopes;
    bool operator==(const RedactionPattern&) const = default;
};

// The settings redaction.rules and redaction.patterns, parsed. Rules: "" for none, a JSON array
// of rule names, or a comma list ("email, card"). Patterns: "" for none, or a JSON array of
// objects {"name", "regex", "scope": a scope name or an array of them (absent: all four)}.
// kInvalidRequest naming what is wrong (an unknown rule, a bad regex, an unknown scope, ...).
base::Result<std::vector<std::string>> parse_redaction_rules(std::string_view text);
base::Result<std::vector<RedactionPattern>> parse_redaction_patterns(std::string_view text);
// The same as a configuration check: why the value cannot be used, or nullopt.
std::optional<std::string> redaction_rules_problem(std::string_view text);
std::optional<std::string> redaction_patterns_problem(std::string_view text);

// How many matches each rule masked, per scope: what a trace records of a redaction.
class RedactionTally {
public:
    void add(std::string_view rule, RedactionScope scope, std::uint64_t count);
    bool empty() const noexcept { return counts_.empty(); }
    // (rule, scope) → count, ordered by rule then scope.
    const std::map<std::pair<std::string, RedactionScope>, std::uint64_t>& counts() const noexcept {
        return counts_;
    }
    std::uint64_t total() const noexcept;
    void clear() noexcept { counts_.clear(); }

private:
    std::map<std::pair<std::string, RedactionScope>, std::uint64_t> counts_;
};

// A user pattern's regular expression runs on pieces of text of at most this many bytes (cut at
// a line break or else a space where there is one): libstdc++'s matcher recurses per character,
// so a bounded input bounds its stack and time. A match cannot span two pieces.
inline constexpr std::size_t kMaxPatternInput = 4096;

// The configured rules, compiled once; immutable and safe to share between threads.
class Redactor {
public:
    Redactor() = default;  // redacts nothing
    // kInvalidRequest for an unknown rule or a pattern that does not compile.
    static base::Result<Redactor> make(const std::vector<std::string>& rules,
                                       const std::vector<RedactionPattern>& patterns);
    // Parses the two settings' texts first.
    static base::Result<Redactor> from_settings(std::string_view rules, std::string_view patterns);

    bool empty() const noexcept { return rules_.empty() && patterns_.empty(); }

    // `text` with every match of the built-in rules and of the patterns for `scope` masked:
    // nullopt when nothing matched (the text is kept as is). Counts go to `tally`.
    std::optional<std::string> redact(std::string_view text, RedactionScope scope,
                                      RedactionTally& tally) const;
    // The same with every pattern whatever its scope (for texts that may quote any of them, such
    // as an error message); counted under `scope`.
    std::optional<std::string> redact_everywhere(std::string_view text, RedactionScope scope,
                                                 RedactionTally& tally) const;

private:
    struct CompiledPattern {
        std::string name;
        std::regex regex;
        std::array<bool, kRedactionScopes> scopes{};
    };
    std::optional<std::string> apply(std::string_view text, RedactionScope scope, bool all_patterns,
                                     RedactionTally& tally) const;

    std::vector<std::string> rules_;  // built-in rule names, in the order they apply
    std::vector<CompiledPattern> patterns_;
};

// The spans [begin, end) (bytes) of `text` a built-in rule matches (exposed for tests): e-mail
// addresses; phone numbers in international (+CC) or common national forms with separators;
// card numbers of 13-19 digits (spaces or dashes between) that pass the Luhn check; IBANs
// (country, check digits, BBAN; groups of four may be spaced) that pass the mod-97 check.
std::vector<std::pair<std::size_t, std::size_t>> find_builtin(std::string_view rule,
                                                              std::string_view text);
// The mask of a match of `rule` that had `code_points` code points: "[rule]" then '*' up to
// that length, or only '*' when the match is shorter than the tag. ASCII, one code point each.
std::string redaction_mask(std::string_view rule, std::size_t code_points);

}  // namespace glassbox::text
