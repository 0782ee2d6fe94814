// The facts of explain steps by subject, names by label, and selections best first: what the
// `invoke -x` lines and the default `traces show` tree both read.
#include "cli/render/step_facts.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

#include "cli/render/render_text.hpp"
#include "schema/term_json.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::cli::render::detail {

using nlohmann::json;
using schema::Term;
using schema::Triple;
namespace vocab = schema::vocab;

void StepFacts::add(const Triple& triple) {
    if (triple.p.is_iri() && triple.p.as_iri().value == vocab::kRdfsLabel &&
        triple.o.is_literal() && triple.s.is_iri()) {
        labels_.emplace(triple.s.as_iri().value, triple.o.as_literal().value);
    }
    by_subject_[term_key(triple.s)].push_back(triple);
}

std::vector<Term> StepFacts::values(const Term& node, std::string_view predicate) const {
    std::vector<Term> out;
    const auto it = by_subject_.find(term_key(node));
    if (it == by_subject_.end()) return out;
    for (const auto& triple : it->second) {
        if (triple.p.is_iri() && triple.p.as_iri().value == predicate &&
            std::find(out.begin(), out.end(), triple.o) == out.end())
            out.push_back(triple.o);
    }
    return out;
}

std::optional<Term> StepFacts::value(const Term& node, std::string_view predicate) const {
    auto all = values(node, predicate);
    if (all.empty()) return std::nullopt;
    return all.front();
}

std::optional<std::string> StepFacts::text(const Term& node, std::string_view predicate) const {
    auto term = value(node, predicate);
    if (!term || !term->is_literal()) return std::nullopt;
    return term->as_literal().value;
}

std::optional<double> StepFacts::number(const Term& node, std::string_view predicate) const {
    auto lexical = text(node, predicate);
    if (!lexical) return std::nullopt;
    char* end = nullptr;
    const double parsed = std::strtod(lexical->c_str(), &end);
    if (end == lexical->c_str()) return std::nullopt;
    return parsed;
}

std::optional<std::string> StepFacts::stored_text(const Term& node, std::string_view text_predicate,
                                                  std::string_view ref_predicate) const {
    if (auto inline_text = text(node, text_predicate)) return inline_text;
    const auto ref = value(node, ref_predicate);
    if (!ref) return std::nullopt;
    const auto it = by_subject_.find(term_key(*ref));
    if (it == by_subject_.end()) return std::nullopt;
    for (const auto& triple : it->second) {
        if (triple.o.is_literal()) return triple.o.as_literal().value;
    }
    return std::nullopt;
}

bool StepFacts::has_type(const Term& node, std::string_view type) const {
    for (const auto& t : values(node, vocab::kRdfType)) {
        if (t.is_iri() && t.as_iri().value == type) return true;
    }
    return false;
}

std::string StepFacts::name(const Term& term) const {
    switch (term.kind()) {
        case Term::Kind::kIri: {
            const auto& iri = term.as_iri().value;
            if (auto it = labels_.find(iri); it != labels_.end()) return it->second;
            if (fallback_ != nullptr) {
                if (auto it = fallback_->find(iri); it != fallback_->end() && !it->second.empty())
                    return it->second;
            }
            const auto cut = iri.find_last_of("#/:");
            return cut == std::string::npos || cut + 1 == iri.size() ? iri : iri.substr(cut + 1);
        }
        case Term::Kind::kLiteral:
            return "\"" + term.as_literal().value + "\"";
        case Term::Kind::kBlankNode:
            return schema::to_ntriples(term);
        case Term::Kind::kTriple: {
            const auto& t = term.as_triple();
            return "<< " + name(t.s) + " " + name(t.p) + " " + name(t.o) + " >>";
        }
    }
    return {};
}

std::string score_text(std::optional<double> score) {
    return score ? " (" + score_value(score) + ")" : std::string();
}

std::string score_value(std::optional<double> score) {
    if (!score) return "-";
    std::array<char, 32> buf{};
    std::snprintf(buf.data(), buf.size(), "%.2f", *score);
    return buf.data();
}

namespace {

// A chunk by its document's file name and fragment ("notes.md#chunk-2").
std::string chunk_name(const StepFacts& facts, const Term& selection,
                       const std::map<std::string, std::string>& chunk_names) {
    const auto chunk = facts.value(selection, vocab::kSourceChunk);
    if (chunk && chunk->is_iri()) {
        const auto& iri = chunk->as_iri().value;
        const auto slash = iri.find_last_of('/');
        return slash == std::string::npos || slash + 1 == iri.size() ? iri : iri.substr(slash + 1);
    }
    for (const auto& from : facts.values(selection, vocab::kProvWasDerivedFrom)) {
        if (!from.is_iri()) continue;
        if (auto it = chunk_names.find(from.as_iri().value); it != chunk_names.end())
            return it->second;
    }
    return facts.name(selection);
}

}  // namespace

std::string freshness_text(const StepFacts& facts, const Term& source) {
    std::string out;
    const auto part = [&](const std::string& text) {
        out.append(out.empty() ? "" : ", ").append(text);
    };
    if (auto date = facts.text(source, vocab::kDctermsDate)) part("dated " + *date);
    if (auto loaded = facts.text(source, vocab::kProvGeneratedAtTime)) part("loaded " + *loaded);
    if (auto age = facts.text(source, vocab::kMaxAge)) part("max age " + *age);
    if (stale_source(facts, source)) part("STALE");
    return out;
}

bool stale_source(const StepFacts& facts, const Term& source) {
    return facts.text(source, vocab::kStale) == std::optional<std::string>("true");
}

std::vector<Selection> selections(const StepFacts& facts, const Term& node,
                                  std::string_view predicate, bool edges,
                                  std::map<std::string, std::string>& chunk_names, bool arrows) {
    std::vector<Selection> items;
    for (const auto& selection : facts.values(node, predicate)) {
        Selection item{facts.number(selection, vocab::kScore), {}};
        if (edges) {
            const auto s = facts.value(selection, vocab::kRdfSubject);
            const auto p = facts.value(selection, vocab::kRdfPredicate);
            const auto o = facts.value(selection, vocab::kRdfObject);
            const std::string sn = s ? facts.name(*s) : "?";
            const std::string pn = p ? facts.name(*p) : "?";
            const std::string on = o ? facts.name(*o) : "?";
            item.text = sn;
            item.text.append(arrows ? " -" : " ")
                .append(pn)
                .append(arrows ? "-> " : " ")
                .append(on);
        } else {
            item.text = chunk_name(facts, selection, chunk_names);
            if (selection.is_iri()) chunk_names[selection.as_iri().value] = item.text;
        }
        if (const auto document = facts.value(selection, vocab::kSourceDocument);
            document && stale_source(facts, *document)) {
            std::string why;
            if (auto date = facts.text(*document, vocab::kDctermsDate)) why = "dated " + *date;
            if (auto age = facts.text(*document, vocab::kMaxAge))
                why.append(why.empty() ? "" : ", ").append("max age " + *age);
            item.text.append("  STALE").append(why.empty() ? "" : " (" + why + ")");
        }
        items.push_back(std::move(item));
    }
    std::stable_sort(items.begin(), items.end(), [](const Selection& a, const Selection& b) {
        return a.score.value_or(-1e300) > b.score.value_or(-1e300);
    });
    return items;
}

}  // namespace glassbox::cli::render::detail
