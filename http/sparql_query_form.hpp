// The form of a SPARQL request (SELECT, ASK, CONSTRUCT, DESCRIBE or an update), read from the
// first keyword after its prologue: what the front ends need to refuse updates and to choose a
// result media type. Not a parser: the engine checks the rest.
#pragma once

#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>

namespace glassbox::http {

enum class SparqlForm { kSelect, kAsk, kConstruct, kDescribe, kUpdate, kUnknown };

namespace detail {

// Skips white space and `#` comments (SPARQL 1.1 §19.6) from `at`.
inline std::size_t skip_blank(std::string_view text, std::size_t at) {
    while (at < text.size()) {
        const auto c = static_cast<unsigned char>(text[at]);
        if (std::isspace(c) != 0) {
            ++at;
        } else if (c == '#') {
            while (at < text.size() && text[at] != '\n') ++at;
        } else {
            break;
        }
    }
    return at;
}

// The token at `at`: an IRI reference `<...>` whole, else a run of characters up to white space,
// `#`, `<` or `{`.
inline std::string_view token_at(std::string_view text, std::size_t at) {
    if (at >= text.size()) return {};
    if (text[at] == '<') {
        const auto end = text.find('>', at);
        return text.substr(at,
                           end == std::string_view::npos ? std::string_view::npos : end - at + 1);
    }
    std::size_t end = at;
    while (end < text.size()) {
        const auto c = static_cast<unsigned char>(text[end]);
        if (std::isspace(c) != 0 || c == '#' || c == '<' || c == '{' || c == '*' || c == '(') break;
        ++end;
    }
    return text.substr(at, end - at);
}

inline std::string upper(std::string_view word) {
    std::string out(word);
    for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace detail

// The form of `text`: its prologue (BASE <iri>, PREFIX p: <iri>, comments) skipped, the first
// keyword. An update keyword (INSERT, DELETE, LOAD, CLEAR, CREATE, DROP, COPY, MOVE, ADD, WITH)
// is kUpdate; anything else not a query form is kUnknown.
inline SparqlForm sparql_form(std::string_view text) {
    std::size_t at = detail::skip_blank(text, 0);
    while (at < text.size()) {
        const auto token = detail::token_at(text, at);
        if (token.empty()) return SparqlForm::kUnknown;
        const std::string word = detail::upper(token);
        at += token.size();
        if (word == "BASE" || word == "PREFIX") {
            // PREFIX takes a prefixed name ("p:" or ":") then an IRI; BASE an IRI.
            const int operands = word == "PREFIX" ? 2 : 1;
            for (int i = 0; i < operands; ++i) {
                at = detail::skip_blank(text, at);
                const auto operand = detail::token_at(text, at);
                if (operand.empty()) return SparqlForm::kUnknown;
                at += operand.size();
            }
            at = detail::skip_blank(text, at);
            continue;
        }
        if (word == "SELECT") return SparqlForm::kSelect;
        if (word == "ASK") return SparqlForm::kAsk;
        if (word == "CONSTRUCT") return SparqlForm::kConstruct;
        if (word == "DESCRIBE") return SparqlForm::kDescribe;
        for (const char* update : {"INSERT", "DELETE", "LOAD", "CLEAR", "CREATE", "DROP", "COPY",
                                   "MOVE", "ADD", "WITH"}) {
            if (word == update) return SparqlForm::kUpdate;
        }
        return SparqlForm::kUnknown;
    }
    return SparqlForm::kUnknown;
}

}  // namespace glassbox::http
