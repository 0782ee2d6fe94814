// Tracing an agent's answer back through its lookups, and the citations and sources it rests on.
#include "workers/agent/answer_evidence.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "base/utf8.hpp"
#include "schema/citation_marker.hpp"
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

namespace {

// True when `text` holds a "[n]" marker.
bool has_marker(std::string_view text) {
    for (std::size_t open = text.find('['); open != std::string::npos;
         open = text.find('[', open + 1)) {
        std::size_t close = open + 1;
        while (close < text.size() && text[close] >= '0' && text[close] <= '9') ++close;
        if (close > open + 1 && close < text.size() && text[close] == ']') return true;
    }
    return false;
}

// True when `text` ends with a "[n]" marker.
bool ends_with_marker(std::string_view text) {
    if (!text.ends_with(']')) return false;
    std::size_t open = text.size() - 1;
    while (open > 0 && text[open - 1] >= '0' && text[open - 1] <= '9') --open;
    return open + 1 < text.size() && open > 0 && text[open - 1] == '[';
}

// `text` with " [n]…" for `numbers` before its closing full stop (or at its end), joined to a
// marker already there ("[1][2]").
std::string append_markers(std::string text, const std::vector<std::uint32_t>& numbers) {
    std::string markers;
    for (const auto n : numbers) markers += "[" + std::to_string(n) + "]";
    if (markers.empty()) return text;
    std::size_t end = text.size();
    while (end > 0 && (text[end - 1] == ' ' || text[end - 1] == '\n')) --end;
    const std::size_t at = end > 0 && text[end - 1] == '.' ? end - 1 : end;
    const bool joined = ends_with_marker(std::string_view(text).substr(0, at));
    text.insert(at, joined ? markers : " " + markers);
    return text;
}

// One change to a tool's text: at byte `at`, `length` bytes (a "[n]" the text holds; 0: none,
// an insertion) become the marker of citation `n`.
struct MarkerEdit {
    std::size_t at = 0;
    std::size_t length = 0;
    std::uint32_t n = 0;
    bool operator==(const MarkerEdit&) const = default;
    bool operator<(const MarkerEdit& o) const {
        return std::tie(at, length, n) < std::tie(o.at, o.length, o.n);
    }
};

// The "[n]" markers `text` holds, in order.
std::vector<MarkerEdit> written_markers(std::string_view text) {
    std::vector<MarkerEdit> out;
    for (std::size_t open = text.find('['); open != std::string_view::npos;
         open = text.find('[', open + 1)) {
        std::size_t close = open + 1;
        std::uint32_t n = 0;
        while (close < text.size() && close - open <= 9 && text[close] >= '0' && text[close] <= '9')
            n = n * 10 + static_cast<std::uint32_t>(text[close++] - '0');
        if (close > open + 1 && close < text.size() && text[close] == ']')
            out.push_back({open, close + 1 - open, n});
    }
    return out;
}

// Where a marker for `span` goes, as a byte offset of `text` (schema::marker_point, as the CLI
// places a RAG engine's markers); nullopt for a span outside `text`.
std::optional<std::size_t> marker_place(std::string_view text, std::uint64_t code_points,
                                        const schema::AnswerSpan& span) {
    if (span.start >= span.end) return std::nullopt;
    const auto at = schema::marker_point(text, code_points, span);
    if (!at) return std::nullopt;
    return schema::code_point_byte(text, *at);
}

}  // namespace

std::string with_citation_markers(std::string text, std::size_t count,
                                  const std::set<std::uint32_t>& left_out) {
    if (count == 0 || text.empty() || has_marker(text)) return text;
    std::vector<std::uint32_t> numbers;
    for (std::size_t n = 1; n <= count; ++n)
        if (!left_out.contains(static_cast<std::uint32_t>(n)))
            numbers.push_back(static_cast<std::uint32_t>(n));
    return append_markers(std::move(text), numbers);
}

std::string with_tool_markers(std::string text,
                              const std::vector<schema::RagCitation>& tool_citations,
                              const std::vector<schema::RagCitation>& citations,
                              const std::set<std::uint32_t>& left_out) {
    if (text.empty()) return text;
    const auto agent_number = [&](const schema::RagCitation& c) -> std::uint32_t {
        for (const auto& own : citations)
            if (!c.selection.empty() && own.selection == c.selection) return own.n;
        return 0;
    };
    std::vector<MarkerEdit> edits;
    const auto written = written_markers(text);
    for (const auto& m : written) {
        for (const auto& c : tool_citations)
            if (c.n == m.n && agent_number(c) != 0) {
                edits.push_back({m.at, m.length, agent_number(c)});
                break;
            }
    }
    const std::uint64_t code_points = base::count_code_points(text);
    for (const auto& c : tool_citations) {
        const std::uint32_t n = agent_number(c);
        for (const auto& span : c.spans) {
            const auto at = n == 0 ? std::nullopt : marker_place(text, code_points, span);
            const MarkerEdit edit{at.value_or(0), 0, n};
            if (at && std::find(edits.begin(), edits.end(), edit) == edits.end())
                edits.push_back(edit);
        }
    }
    std::sort(edits.begin(), edits.end());
    std::string out;
    std::size_t copied = 0;
    std::set<std::uint32_t> placed;
    for (std::size_t i = 0; i < edits.size(); ++i) {
        const auto& e = edits[i];
        if (e.at < copied) continue;  // a span's end inside a marker the text holds
        out.append(text, copied, e.at - copied);
        copied = e.at + e.length;
        const bool joined = i > 0 && edits[i - 1].length == 0 && edits[i - 1].at == e.at;
        if (e.length == 0 && !joined) out += ' ';
        out += "[" + std::to_string(e.n) + "]";
        placed.insert(e.n);
    }
    out.append(text, copied);
    // A text that cites in its own words (a conflict note) is complete as it is; else the
    // agent's other sources (its lookups' facts, another tool's passages) go at its end.
    if (!written.empty()) return out;
    std::vector<std::uint32_t> rest;
    for (const auto& c : citations)
        if (!placed.contains(c.n) && !left_out.contains(c.n)) rest.push_back(c.n);
    return append_markers(std::move(out), rest);
}

}  // namespace glassbox::agent
