// Reading facts out of one explain message.
#include "gateway/explain_view.hpp"

#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/ascii.hpp"
#include "schema/explain_terms.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::gateway {

using nlohmann::json;
namespace vocab = schema::vocab;

namespace {

// A string member of an object, viewed in place ("" when absent or not a string): the lookups
// below run once per triple, so they copy nothing.
std::string_view view_of(const json& object, std::string_view key) {
    if (!object.is_object()) return {};
    const auto it = object.find(key);
    return it != object.end() && it->is_string()
               ? std::string_view(it->get_ref<const std::string&>())
               : std::string_view{};
}

// The IRI of an {"t":"i","i":…} term or the lexical form of an {"t":"l","v":…} term.
std::optional<std::string> term_value(const json& term) {
    if (!term.is_object()) return std::nullopt;
    const std::string_view kind = view_of(term, "t");
    if (kind == "i") {
        const auto it = term.find("i");
        if (it != term.end() && it->is_string()) return it->get<std::string>();
    } else if (kind == "l") {
        const auto it = term.find("v");
        if (it != term.end() && it->is_string()) return it->get<std::string>();
    }
    return std::nullopt;
}

// Calls fn(s, p, o) for each well-formed triple of the message, in either form of
// explain_triples (docs/protocol.md §8.1).
template <typename Fn>
void for_each_triple(const json& explain, const Fn& fn) {
    schema::for_each_explain_triple(explain, fn);
}

bool is_iri(const json& term, std::string_view iri) {
    if (!term.is_object() || view_of(term, "t") != "i") return false;
    const auto it = term.find("i");
    return it != term.end() && it->is_string() && it->get_ref<const std::string&>() == iri;
}

}  // namespace

std::string compact_json(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string string_of(const json& object, std::string_view key) {
    return std::string(view_of(object, key));
}

std::vector<std::string> explain_values(const json& explain, std::string_view subject,
                                        std::string_view predicate) {
    std::vector<std::string> values;
    for_each_triple(explain, [&](const json& s, const json& p, const json& o) {
        if (!is_iri(s, subject) || !is_iri(p, predicate)) return;
        if (auto value = term_value(o)) values.push_back(std::move(*value));
    });
    return values;
}

std::optional<std::string> explain_value(const json& explain, std::string_view subject,
                                         std::string_view predicate) {
    auto values = explain_values(explain, subject, predicate);
    if (values.empty()) return std::nullopt;
    return std::move(values.front());
}

std::vector<std::vector<std::optional<std::string>>> explain_table(
    const json& explain, const std::vector<std::string>& subjects,
    const std::vector<std::string_view>& predicates) {
    std::vector<std::vector<std::optional<std::string>>> table(
        subjects.size(), std::vector<std::optional<std::string>>(predicates.size()));
    if (subjects.empty()) return table;
    std::unordered_map<std::string_view, std::size_t> row;
    for (std::size_t i = 0; i < subjects.size(); ++i) row.emplace(subjects[i], i);
    for_each_triple(explain, [&](const json& s, const json& p, const json& o) {
        if (!s.is_object() || view_of(s, "t") != "i" || !p.is_object()) return;
        const auto subject = s.find("i");
        const auto predicate = p.find("i");
        if (subject == s.end() || !subject->is_string() || predicate == p.end() ||
            !predicate->is_string())
            return;
        const auto r = row.find(subject->get_ref<const std::string&>());
        if (r == row.end()) return;
        for (std::size_t j = 0; j < predicates.size(); ++j) {
            auto& cell = table[r->second][j];
            if (!cell && predicate->get_ref<const std::string&>() == predicates[j])
                cell = term_value(o);
        }
    });
    return table;
}

std::string explain_step_type(const json& explain) {
    const std::string step = string_of(explain, "explain_id");
    std::string gb;
    std::string prov;
    for (const auto& type : explain_values(explain, step, vocab::kRdfType)) {
        const std::string_view iri = type;
        if (iri.starts_with(vocab::kGbNs)) {
            if (!gb.empty()) gb += '+';
            gb += iri.substr(vocab::kGbNs.size());
        } else if (prov.empty() && iri.starts_with(vocab::kProvNs)) {
            prov = iri.substr(vocab::kProvNs.size());
        }
    }
    return gb.empty() ? prov : gb;
}

namespace {

// "RoutingDecision+ToolUse" as "routing decision, tool use".
std::string type_words(std::string_view type) {
    std::string words;
    for (std::size_t i = 0; i < type.size(); ++i) {
        const char c = type[i];
        if (c == '+') {
            words += ", ";
        } else if (c >= 'A' && c <= 'Z') {
            if (i > 0 && type[i - 1] != '+') words += ' ';
            words += base::ascii_lower(c);
        } else {
            words += c;
        }
    }
    return words;
}

}  // namespace

std::string step_line(const json& explain) {
    const std::string type = explain_step_type(explain);
    if (type.empty()) return {};
    const std::string id = string_of(explain, "explain_id");
    std::string line = string_of(explain, "service");
    if (!line.empty()) line += ' ';
    std::string detail;
    if (type == "RoutingDecision") {
        line += "route decided";
        detail = explain_value(explain, id, vocab::kEngine).value_or("");
    } else {
        line += type_words(type);
        if (type == "Escalation") {
            const auto from = explain_value(explain, id, vocab::kFromEngine);
            const auto to = explain_value(explain, id, vocab::kEngine);
            if (from && to) detail = *from + " -> " + *to;
        } else if (type.find("ToolUse") != std::string::npos) {
            detail = explain_value(explain, id, vocab::kAction).value_or("");
        } else {
            const auto counted = [&](std::string_view predicate, const char* noun) {
                if (auto n = explain_value(explain, id, predicate)) {
                    if (!detail.empty()) detail += ", ";
                    detail += *n + " " + noun;
                }
            };
            counted(vocab::kEdgeCount, "edges");
            counted(vocab::kChunkCount, "chunks");
        }
    }
    if (!detail.empty()) line += ": " + detail;
    return line;
}

}  // namespace glassbox::gateway
