// The answer a reader sees: citation markers placed at their spans, and the Sources list.
#include "cli/render/answer_render.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <tuple>
#include <utility>

#include "cli/render/render_text.hpp"
#include "cli/render/trace_render.hpp"
#include "schema/citation_marker.hpp"

namespace glassbox::cli::render {

namespace {

// One line of a citation's text, cut for the list.
constexpr std::size_t kQuoteWidth = 300;

std::string one_line(std::string_view text) {
    std::string out;
    for (char c : text) out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
    return safe_text(detail::truncate_text(out, kQuoteWidth), false);
}

}  // namespace

std::string mark_citations(std::string_view answer,
                           const std::vector<schema::RagCitation>& citations) {
    const std::size_t length = detail::code_points(answer);
    std::vector<std::pair<std::uint64_t, std::uint32_t>> marks;  // (code point, n)
    for (const auto& c : citations) {
        for (const auto& span : c.spans) {
            const auto point = schema::marker_point(answer, length, span);
            if (!point) continue;
            const std::uint64_t at = *point;
            if (std::find(marks.begin(), marks.end(), std::pair{at, c.n}) == marks.end())
                marks.emplace_back(at, c.n);
        }
    }
    std::sort(marks.begin(), marks.end());
    std::string out;
    std::size_t copied = 0;
    for (std::size_t i = 0; i < marks.size(); ++i) {
        const std::size_t at = detail::code_point_offset(answer, marks[i].first);
        out.append(answer.substr(copied, at - copied));
        copied = at;
        if (i == 0 || marks[i - 1].first != marks[i].first) out += ' ';
        out += "[" + std::to_string(marks[i].second) + "]";
    }
    out.append(answer.substr(copied));
    return out;
}

std::string render_sources(const std::vector<schema::RagCitation>& citations,
                           std::string_view answer) {
    const std::size_t length = detail::code_points(answer);
    std::string out;
    for (const auto& c : citations) {
        const std::string number = "  [" + std::to_string(c.n) + "] ";
        const std::string indent(number.size(), ' ');
        std::vector<std::string> where;
        if (c.kind == "chunk") {
            out += number + one_line(c.title.empty() ? (c.document.empty() ? c.chunk : c.document)
                                                     : c.title);
            if (!c.document.empty()) where.push_back("document " + one_line(c.document));
            if (!c.chunk.empty()) where.push_back("chunk " + one_line(c.chunk));
            if (c.char_offset && c.char_end)
                where.push_back("characters " + std::to_string(*c.char_offset) + "–" +
                                std::to_string(*c.char_end));
            if (c.tier > 0) where.push_back("tier " + std::to_string(c.tier));
            if (!where.empty()) {
                out += " (";
                for (std::size_t i = 0; i < where.size(); ++i) out += (i ? ", " : "") + where[i];
                out += ")";
            }
            out += "\n";
            // The sentences of the answer that cite it, each once, when there are several.
            std::vector<std::string> quoted;
            for (const auto& span : c.spans) {
                if (span.end > length || span.start >= span.end) continue;
                const std::size_t from = detail::code_point_offset(answer, span.start);
                const std::size_t to = detail::code_point_offset(answer, span.end);
                std::string sentence(answer.substr(from, to - from));
                while (!sentence.empty() && sentence.front() == ' ') sentence.erase(0, 1);
                if (!sentence.empty() &&
                    std::find(quoted.begin(), quoted.end(), sentence) == quoted.end())
                    quoted.push_back(std::move(sentence));
            }
            if (quoted.size() > 1) {
                for (const auto& q : quoted) out += indent + "\"" + one_line(q) + "\"\n";
            } else if (!c.text.empty()) {
                out += indent + "\"" + one_line(c.text) + "\"\n";
            }
            continue;
        }
        // A fact: what it says, then where it was loaded from.
        out += number + one_line(c.text.empty() ? c.selection : c.text) + "\n";
        std::string from;
        if (!c.chunk.empty()) {
            from = "fact from chunk " + one_line(c.chunk);
            if (!c.document.empty()) from += " of " + one_line(c.document);
        } else if (!c.document.empty()) {
            from = "fact from " + one_line(c.document);
        } else {
            from = "fact (source not recorded)";
        }
        if (c.tier > 0) from += ", tier " + std::to_string(c.tier);
        out += indent + from + "\n";
    }
    return out;
}

std::string confidence_line(const nlohmann::json& final) {
    if (!final.is_object() || !final.contains("confidence") || !final["confidence"].is_number())
        return {};
    const double p = std::clamp(final["confidence"].get<double>(), 0.0, 1.0);
    std::string line =
        "confidence: " + std::to_string(static_cast<int>(std::lround(p * 100))) + " %";
    if (final.contains("confidence_words") && final["confidence_words"].is_string())
        line += " (" + final["confidence_words"].get<std::string>() + ")";
    if (final.contains("abstained") && final["abstained"] == true)
        line += ", below the floor asked for: no answer given";
    // The features with the largest effect each way.
    std::string raised, lowered;
    double up = 0.0, down = 0.0;
    if (final.contains("evidence") && final["evidence"].is_array()) {
        for (const auto& f : final["evidence"]) {
            if (!f.is_object() || !f.contains("effect") || !f["effect"].is_number() ||
                !f.contains("name") || !f["name"].is_string())
                continue;
            const double effect = f["effect"].get<double>();
            if (effect > up) std::tie(up, raised) = std::pair{effect, f["name"].get<std::string>()};
            if (effect < down)
                std::tie(down, lowered) = std::pair{effect, f["name"].get<std::string>()};
        }
    }
    if (!raised.empty()) line += "; raised most by " + raised;
    if (!lowered.empty())
        line += (raised.empty() ? "; " : ", ") + std::string("lowered most by ") + lowered;
    return safe_text(line, false);
}

}  // namespace glassbox::cli::render
