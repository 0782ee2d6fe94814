// Evidence from an engine's trace and FINAL, and its relevance to the question.
#include "workers/query/relevance.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "schema/vocabulary.hpp"
#include "text/tokenize.hpp"
#include "workers/query/question_features.hpp"

namespace glassbox::query {
namespace {

using nlohmann::json;
namespace v = schema::vocab;

// The readable end of an IRI: "http://x/e/Cruz_Azul_FC" → "Cruz Azul FC".
std::string local_name(const std::string& iri) {
    const auto cut = iri.find_last_of("/#:");
    std::string name = cut == std::string::npos ? iri : iri.substr(cut + 1);
    std::replace(name.begin(), name.end(), '_', ' ');
    return name;
}

// The N of "...:edge:N" / "...:chunk:N" (order of the engine's own list).
std::size_t index_of(const std::string& uri) {
    const auto colon = uri.rfind(':');
    std::size_t n = 0;
    if (colon == std::string::npos) return n;
    std::from_chars(uri.data() + colon + 1, uri.data() + uri.size(), n);
    return n;
}

double number_of(const std::string& text) {
    double value = 0.0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
}

using Properties = std::multimap<std::string, std::string>;

// The properties of every selection (gb:EdgeSelection, gb:ChunkSelection), of what they were
// derived from, and of "" (where item_of looks for the source of a selection derived from
// nothing), by subject: the only subjects item_of reads.
std::map<std::string, Properties> selection_subjects(const std::vector<TripleView>& triples) {
    std::set<std::string_view> wanted{std::string_view{}};
    for (const auto& t : triples) {
        if (t.p == v::kRdfType && (t.o == v::kEdgeSelection || t.o == v::kChunkSelection))
            wanted.insert(t.s);
    }
    std::vector<std::string_view> sources;
    for (const auto& t : triples) {
        if (t.p == v::kProvWasDerivedFrom && wanted.contains(t.s)) sources.push_back(t.o);
    }
    wanted.insert(sources.begin(), sources.end());
    std::map<std::string, Properties> subjects;
    for (const auto& t : triples) {
        if (wanted.contains(t.s)) subjects[std::string(t.s)].emplace(t.p, t.o);
    }
    return subjects;
}

std::string first(const Properties& props, std::string_view predicate) {
    const auto it = props.find(std::string(predicate));
    return it == props.end() ? std::string() : it->second;
}

bool has(const Properties& props, std::string_view predicate, std::string_view value) {
    const auto [lo, hi] = props.equal_range(std::string(predicate));
    for (auto it = lo; it != hi; ++it) {
        if (it->second == value) return true;
    }
    return false;
}

EvidenceItem item_of(const std::string& uri, const Properties& props,
                     const std::map<std::string, Properties>& subjects) {
    EvidenceItem item;
    item.selection = uri;
    item.score = number_of(first(props, v::kScore));
    item.tier = static_cast<int>(number_of(first(props, v::kDataTier)));
    item.source = first(props, v::kSourceChunk);
    if (item.source.empty()) item.source = first(props, v::kSourceDocument);
    const std::string s = first(props, v::kRdfSubject);
    if (!s.empty()) {
        item.text = local_name(s) + " " + local_name(first(props, v::kRdfPredicate)) + " " +
                    local_name(first(props, v::kRdfObject));
    }
    // A re-ranked chunk names its source through the retrieved chunk it was derived from.
    if (item.source.empty()) {
        const auto parent = subjects.find(first(props, v::kProvWasDerivedFrom));
        if (parent != subjects.end()) {
            item.source = first(parent->second, v::kSourceChunk);
            if (item.tier == 0)
                item.tier = static_cast<int>(number_of(first(parent->second, v::kDataTier)));
        }
    }
    return item;
}

// Distinct stems of the content words, for coverage.
std::set<std::string> stems(std::string_view text) {
    const auto list = text::content_stems(text);
    return {list.begin(), list.end()};
}

}  // namespace

std::string string_of(const json& body, const char* key) {
    if (!body.is_object()) return {};
    const auto it = body.find(key);
    return it != body.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Evidence read_evidence(const std::vector<json>& explain, const json& final) {
    EvidenceTriples triples;
    for (const auto& body : explain) triples.add(body);
    return read_gathered_evidence(triples, final);
}

Evidence read_gathered_evidence(const EvidenceTriples& triples, const json& final) {
    const auto subjects = selection_subjects(triples.triples());
    std::vector<std::pair<std::string, const Properties*>> edges, focus_chunks, retrieved_chunks;
    for (const auto& [uri, props] : subjects) {
        if (has(props, v::kRdfType, v::kEdgeSelection)) {
            edges.emplace_back(uri, &props);
        } else if (has(props, v::kRdfType, v::kChunkSelection)) {
            (uri.find(":focus:chunk:") != std::string::npos ? focus_chunks : retrieved_chunks)
                .emplace_back(uri, &props);
        }
    }
    const auto by_index = [](const auto& a, const auto& b) {
        return index_of(a.first) < index_of(b.first);
    };
    Evidence evidence;
    for (auto* list : {&edges, focus_chunks.empty() ? &retrieved_chunks : &focus_chunks}) {
        std::sort(list->begin(), list->end(), by_index);
        for (const auto& [uri, props] : *list)
            evidence.kept.push_back(item_of(uri, *props, subjects));
    }
    if (final.is_object()) {
        if (const auto r = final.find("response"); r != final.end() && r->is_string())
            evidence.answer = *r;
        if (const auto a = final.find("answer"); a != final.end() && a->is_string())
            evidence.short_answer = *a;
        if (const auto c = final.find("citations"); c != final.end() && c->is_array()) {
            for (const auto& citation : *c) {
                evidence.cited_text +=
                    string_of(citation, "title") + " " + string_of(citation, "text") + "\n";
            }
        }
        // An answer whose trace kept no selection but that cites facts or names its sources (the
        // agent's, from its store lookups): the cited facts (else the sources' names) and the
        // answer it states are what it rests on.
        const auto sources = final.find("sources");
        const bool cites = !evidence.cited_text.empty();
        const bool names = sources != final.end() && sources->is_array() && !sources->empty();
        if (evidence.kept.empty() && (cites || names) && evidence.short_answer &&
            !evidence.short_answer->empty()) {
            if (!cites) {
                for (const auto& source : *sources)
                    if (source.is_string())
                        evidence.cited_text += local_name(source.get<std::string>()) + "\n";
            }
            evidence.cited_text += evidence.answer + "\n";
        }
    }
    return evidence;
}

Relevance reflect(std::string_view question, const Evidence& evidence) {
    Relevance r;
    r.empty = evidence.kept.empty() && evidence.cited_text.empty();
    if (r.empty) {
        r.reason = "empty result: no edge or chunk kept";
        return r;
    }
    std::string evidence_text = evidence.cited_text;
    for (const auto& item : evidence.kept) evidence_text += item.text + "\n";
    if (evidence.short_answer) evidence_text += *evidence.short_answer;

    const auto wanted = stems(question);
    const auto found = stems(evidence_text);
    std::size_t covered = 0;
    for (const auto& w : wanted) covered += found.contains(w) ? 1 : 0;
    r.coverage =
        wanted.empty() ? 0.0 : static_cast<double>(covered) / static_cast<double>(wanted.size());

    const auto spans = entity_spans(question);
    const std::string normalized_evidence = text::normalize(evidence_text);
    std::size_t named = 0;
    for (const auto& span : spans) {
        if (normalized_evidence.find(text::normalize(span.text)) != std::string::npos) ++named;
    }
    r.entity_coverage =
        spans.empty() ? 1.0 : static_cast<double>(named) / static_cast<double>(spans.size());

    r.decided = !evidence.short_answer ? 0.5 : (evidence.short_answer->empty() ? 0.0 : 1.0);

    std::vector<double> scores;
    for (const auto& item : evidence.kept) scores.push_back(item.score);
    std::sort(scores.begin(), scores.end(), std::greater<>());
    if (!scores.empty()) {
        r.top_score = std::clamp(scores.front(), 0.0, 1.0);
        if (scores.size() > 1 && scores.front() > 0.0)
            r.gap = std::clamp((scores[0] - scores[1]) / scores[0], 0.0, 1.0);
        else if (scores.size() == 1)
            r.gap = 1.0;
    }
    r.score = 0.35 * r.coverage + 0.25 * r.entity_coverage + 0.3 * r.decided +
              0.1 * r.top_score * (0.5 + r.gap / 2.0);
    r.score = std::clamp(r.score, 0.0, 1.0);
    char text[160];
    std::snprintf(
        text, sizeof text, "coverage %.2f, entities %.2f, %s, top score %.2f", r.coverage,
        r.entity_coverage,
        r.decided == 1.0 ? "decided" : (r.decided == 0.0 ? "undecided" : "no short answer"),
        r.top_score);
    r.reason = text;
    return r;
}

Relevance failed_relevance(const base::Error& error) {
    Relevance r;
    r.reason = std::string(base::to_string(error.type)) + ": " + error.message;
    return r;
}

}  // namespace glassbox::query
