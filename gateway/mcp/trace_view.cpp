// Turns a trace's explain events into steps a reader (or a model) can follow.
#include "gateway/mcp/trace_view.hpp"

#include <string>
#include <string_view>
#include <utility>

#include "base/utf8.hpp"
#include "schema/trace_rdf.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::gateway::mcp {

namespace {

namespace vocab = schema::vocab;

// An IRI as Turtle writes it: prefixed in a namespace the trace RDF declares, else in full.
std::string iri_text(const std::string& iri) {
    if (auto name = schema::rdf::prefixed_name(iri)) return *name;
    return "<" + iri + ">";
}

std::string literal_value(const nlohmann::json& term) {
    const auto& v = term.contains("v") ? term["v"] : nlohmann::json("");
    return v.is_string() ? v.get<std::string>() : v.dump();
}

bool is_iri(const nlohmann::json& term, std::string_view iri) {
    return term.is_object() && term.value("t", "") == "i" && term.value("i", "") == iri;
}

// Cut at a UTF-8 boundary, marking the cut.
std::string shorten(std::string text, std::size_t max_chars) {
    if (text.size() <= max_chars) return text;
    text.resize(base::utf8_prefix(text, max_chars).size());
    return text + "…";
}

struct Walk {
    explicit Walk(const TraceViewLimits& l) : limits(l) {}

    const TraceViewLimits& limits;
    nlohmann::json steps = nlohmann::json::array();
    nlohmann::json triples = nlohmann::json::array();
    std::size_t triples_total = 0;
    bool truncated = false;
    std::string text;

    void add_properties(nlohmann::json& properties, const std::string& key, nlohmann::json value) {
        auto it = properties.find(key);
        if (it == properties.end()) {
            properties[key] = std::move(value);
        } else {
            if (!it->is_array()) *it = nlohmann::json::array({*it});
            it->push_back(std::move(value));
        }
    }

    nlohmann::json step_of(const nlohmann::json& event, const std::string& trace, int depth) {
        const std::string step_uri = event.value("explain_id", "");
        std::string type;
        nlohmann::json properties = nlohmann::json::object();
        for (const auto& triple : event.value("triples", nlohmann::json::array())) {
            if (!triple.is_object() || !is_iri(triple.value("s", nlohmann::json()), step_uri))
                continue;
            const auto& p = triple["p"];
            const auto& o = triple.value("o", nlohmann::json());
            if (is_iri(p, vocab::kRdfType)) {
                std::string t = term_text(o);
                // The step's own class (gb:Focus) says more than the PROV base (prov:Entity).
                if (type.empty() || t.rfind("gb:", 0) == 0) type = t;
                continue;
            }
            if (o.is_object() && o.value("t", "") == "l") {
                add_properties(properties, term_text(p),
                               shorten(literal_value(o), limits.max_value_chars));
            }
        }
        if (type.rfind("gb:", 0) == 0) type = type.substr(3);
        return {{"trace", trace},
                {"depth", depth},
                {"seq", event.value("seq", nlohmann::json())},
                {"step", step_uri},
                {"type", type},
                {"state", event.value("state", "")},
                {"received", event.value("received", "")},
                {"properties", std::move(properties)}};
    }

    void add_line(const nlohmann::json& step, const std::string& service) {
        std::string line(static_cast<std::size_t>(step["depth"].get<int>()) * 2, ' ');
        line +=
            "#" + step["seq"].dump() + " " +
            (step["type"].get<std::string>().empty() ? "step" : step["type"].get<std::string>()) +
            " (" + service + ")";
        std::string sep = ": ";
        for (const auto& [key, value] : step["properties"].items()) {
            std::string shown;
            for (const auto& one : value.is_array() ? value : nlohmann::json::array({value})) {
                shown += (shown.empty() ? "" : ", ") + one.get<std::string>();
            }
            line += sep + key + "=" + shorten(shown, 120);
            sep = "; ";
        }
        text += line + "\n";
    }

    void walk(const nlohmann::json& reply, int depth) {
        const auto& summary = reply.value("session", nlohmann::json::object());
        const std::string trace = summary.value("session", "");
        const std::string service = summary.value("service", summary.value("kind", ""));
        text += std::string(static_cast<std::size_t>(depth) * 2, ' ') + "Trace " + trace + " (" +
                service + ", " + summary.value("status", "") + ")\n";
        for (const auto& event : reply.value("events", nlohmann::json::array())) {
            if (!event.is_object()) continue;
            if (steps.size() >= limits.max_steps) {
                truncated = true;
                break;
            }
            nlohmann::json step = step_of(event, trace, depth);
            step["service"] = service;
            add_line(step, service);
            steps.push_back(std::move(step));
            for (const auto& triple : event.value("triples", nlohmann::json::array())) {
                ++triples_total;
                if (triples.size() >= limits.max_triples) {
                    truncated = true;
                    continue;
                }
                nlohmann::json row = {{"s", term_text(triple.value("s", nlohmann::json()))},
                                      {"p", term_text(triple.value("p", nlohmann::json()))},
                                      {"o", term_text(triple.value("o", nlohmann::json()))}};
                if (triple.contains("g")) row["g"] = term_text(triple["g"]);
                triples.push_back(std::move(row));
            }
        }
        for (const auto& sub : reply.value("subtraces", nlohmann::json::array())) {
            if (sub.is_object()) walk(sub, depth + 1);
        }
    }
};

nlohmann::json subtrace_summaries(const nlohmann::json& reply) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& sub : reply.value("subtraces", nlohmann::json::array())) {
        if (sub.is_object()) out.push_back(sub.value("session", nlohmann::json::object()));
    }
    return out;
}

}  // namespace

std::string term_text(const nlohmann::json& term) {
    if (!term.is_object()) return "";
    const std::string kind = term.value("t", "");
    if (kind == "i") return iri_text(term.value("i", ""));
    if (kind == "b") return "_:" + term.value("d", "");
    if (kind == "t" && term.contains("tr") && term["tr"].is_object()) {
        const auto& tr = term["tr"];
        return "<< " + term_text(tr.value("s", nlohmann::json())) + " " +
               term_text(tr.value("p", nlohmann::json())) + " " +
               term_text(tr.value("o", nlohmann::json())) + " >>";
    }
    if (kind != "l") return "";
    std::string out = nlohmann::json(literal_value(term)).dump();
    if (auto ln = term.value("ln", ""); !ln.empty()) return out + "@" + ln;
    auto dt = term.value("dt", "");
    if (!dt.empty() && dt != std::string(vocab::kXsdNs) + "string") out += "^^" + iri_text(dt);
    return out;
}

nlohmann::json trace_view(const nlohmann::json& show_reply, const TraceViewLimits& limits) {
    Walk walk(limits);
    walk.walk(show_reply, 0);
    const auto& summary = show_reply.value("session", nlohmann::json::object());
    return {{"trace", summary.value("session", "")}, {"summary", summary},
            {"steps", std::move(walk.steps)},        {"subtraces", subtrace_summaries(show_reply)},
            {"triples", std::move(walk.triples)},    {"triples_total", walk.triples_total},
            {"truncated", walk.truncated},           {"text", std::move(walk.text)}};
}

}  // namespace glassbox::gateway::mcp
