// Tracing an agent's answer back through its lookups, and the citations and sources it rests on.
#include "workers/agent/answer_evidence.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "schema/fact_citation.hpp"

namespace glassbox::agent {

namespace {

// The source a citation names: its chunk, else its document (a fact loaded from a whole file).
const std::string& cited_source(const schema::RagCitation& c) {
    return c.chunk.empty() ? c.document : c.chunk;
}

// True when `text` holds `sep` ending at `at` (before) or starting at `at` (after).
bool separated_before(std::string_view text, std::size_t at) {
    if (at == 0) return true;
    const auto before = text.substr(0, at);
    return before.ends_with(", ") || before.ends_with(" and ");
}

bool separated_after(std::string_view text, std::size_t at) {
    if (at == text.size()) return true;
    const auto after = text.substr(at);
    return after.starts_with(", ") || after.starts_with(" and ");
}

// A looked-up fact's subject, predicate and object as the citation's parts, when its text is
// them joined (as the lookup's observation wrote it).
void cite_fact_parts(schema::RagCitation& c, const ObservedFact& fact) {
    if (fact.subject_label.empty() || fact.predicate_label.empty()) return;
    const std::string head = fact.subject_label + " " + fact.predicate_label + " ";
    if (!fact.text.starts_with(head) || fact.text.size() == head.size()) return;
    c.subject = fact.subject_label;
    c.predicate = fact.predicate_label;
    c.object = fact.text.substr(head.size());
}

}  // namespace

bool answer_names(std::string_view answer, std::string_view label) {
    const std::string list = normalise_name(answer);
    const std::string name = normalise_name(label);
    if (name.empty() || list.empty()) return false;
    for (std::size_t at = list.find(name); at != std::string::npos; at = list.find(name, at + 1)) {
        if (separated_before(list, at) && separated_after(list, at + name.size())) return true;
    }
    return false;
}

std::vector<std::size_t> facts_behind(std::string_view answer, const std::vector<StepFact>& facts,
                                      std::size_t limit) {
    std::vector<std::size_t> chosen;
    if (normalise_name(answer).empty()) return chosen;
    // Each end of the answer's name is traced back: a list answer cites every end it names.
    const auto leads = [&](const StepFact& f) { return answer_names(answer, f.fact.other_label); };
    // When each entity was first looked up: a fact leading to it must come from before.
    std::map<std::string, std::size_t> looked_up;
    for (const auto& f : facts) {
        auto [it, fresh] = looked_up.emplace(f.fact.entity, f.iteration);
        if (!fresh) it->second = std::min(it->second, f.iteration);
    }
    const auto already = [&](std::size_t i) {
        return std::any_of(chosen.begin(), chosen.end(), [&](std::size_t c) {
            return facts[c].fact.triple == facts[i].fact.triple;
        });
    };
    // Targets still to explain, each with the iteration its support must precede.
    std::vector<std::pair<std::string, std::size_t>> targets;
    std::map<std::string, bool> targeted;
    const auto choose = [&](std::size_t i) {
        chosen.push_back(i);
        const std::string& from = facts[i].fact.entity;
        if (!targeted[from]) {
            targeted[from] = true;
            targets.emplace_back(from, looked_up[from]);
        }
    };
    // The answer comes from the last lookups that reached it; an earlier side fact naming it
    // too is not what the chain ended on.
    std::optional<std::size_t> last;
    for (const auto& f : facts)
        if (leads(f)) last = std::max(last.value_or(0), f.iteration);
    for (std::size_t i = 0; last && i < facts.size() && chosen.size() < limit; ++i) {
        if (facts[i].iteration == *last && leads(facts[i]) && !already(i)) choose(i);
    }
    for (std::size_t t = 0; t < targets.size() && chosen.size() < limit; ++t) {
        const auto [entity, before] = targets[t];
        for (std::size_t i = 0; i < facts.size() && chosen.size() < limit; ++i) {
            if (facts[i].fact.other == entity && facts[i].iteration < before && !already(i))
                choose(i);
        }
    }
    return chosen;
}

AnswerEvidence answer_evidence(const std::vector<ObservedFact>& chosen,
                               const std::vector<std::vector<schema::FactSource>>& fact_sources,
                               const std::vector<schema::RagCitation>& rag_citations,
                               const std::vector<std::string>& rag_sources) {
    AnswerEvidence out;
    for (std::size_t i = 0; i < chosen.size(); ++i) {
        schema::RagCitation c;
        c.kind = "edge";
        c.text = chosen[i].text;
        cite_fact_parts(c, chosen[i]);
        if (i < fact_sources.size() && !fact_sources[i].empty())
            schema::cite_fact_source(c, fact_sources[i].front());
        out.citations.push_back(std::move(c));
    }
    out.citations.insert(out.citations.end(), rag_citations.begin(), rag_citations.end());
    for (std::size_t i = 0; i < out.citations.size(); ++i) {
        auto& c = out.citations[i];
        c.n = static_cast<std::uint32_t>(i + 1);
        c.spans.clear();  // a sub-run's spans point into its own answer text, not the agent's
        const std::string& source = cited_source(c);
        if (source.empty()) continue;
        const int tier = static_cast<int>(c.tier);
        const auto known = std::find_if(out.answer_sources.begin(), out.answer_sources.end(),
                                        [&](const auto& s) { return s.source == source; });
        if (known == out.answer_sources.end()) {
            out.sources.push_back(source);
            // Its freshness as cited, so the Conclusion records which sources are stale.
            out.answer_sources.push_back({source, tier, "agent", std::nullopt,
                                          c.loaded_at.value_or(""), c.date.value_or(""), c.stale});
        } else if ((tier == 0 ? 5 : tier) > (known->data_tier == 0 ? 5 : known->data_tier)) {
            known->data_tier =
                tier;  // the weaker reading of the same source (0: not known, weakest)
        }
    }
    if (out.answer_sources.empty()) {
        for (const auto& source : rag_sources) {
            if (source.empty() ||
                std::find(out.sources.begin(), out.sources.end(), source) != out.sources.end())
                continue;
            out.sources.push_back(source);
            out.answer_sources.push_back({source, 0, "agent"});
        }
    }
    return out;
}

std::string with_citation_markers(std::string text, std::size_t count,
                                  const std::set<std::uint32_t>& left_out) {
    if (count == 0 || text.empty()) return text;
    for (std::size_t open = text.find('['); open != std::string::npos;
         open = text.find('[', open + 1)) {
        std::size_t close = open + 1;
        while (close < text.size() && text[close] >= '0' && text[close] <= '9') ++close;
        if (close > open + 1 && close < text.size() && text[close] == ']') return text;
    }
    std::string markers;
    for (std::size_t n = 1; n <= count; ++n)
        if (!left_out.contains(static_cast<std::uint32_t>(n)))
            markers += "[" + std::to_string(n) + "]";
    if (markers.empty()) return text;
    std::size_t end = text.size();
    while (end > 0 && (text[end - 1] == ' ' || text[end - 1] == '\n')) --end;
    const bool stop = end > 0 && text[end - 1] == '.';
    text.insert(stop ? end - 1 : end, " " + markers);
    return text;
}

}  // namespace glassbox::agent
